--[[ Column alignment as classes, for plain Pandoc (used by analysis.report.pandoc_render).

A left (or default, or centred) column prints no attribute (offline.css aligns text left) and a
right-aligned column's cells carry class "r", instead of Pandoc's per-cell
style="text-align: ..." (which would add some 70 KB to the offline page).

Run on its own (the claims page, which has no cross-reference) or loaded by crossref.lua, which
applies it in its numbering pass over the document. Cells read from Markdown carry no alignment of their
own (every Markdown table reader gives AlignDefault cells; a column's alignment lives in the
table's colspecs), so a cell is touched only to add the class: reading or writing each cell's
alignment through Lua cost more than the rest of the filter.
--]]

local function compact_alignment(tbl)
  local right = {}
  for i, spec in ipairs(tbl.colspecs) do
    right[i] = spec[1] == "AlignRight"
    tbl.colspecs[i] = { "AlignDefault", spec[2] }
  end
  local function mark(rows)
    for _, row in ipairs(rows) do
      for i, cell in ipairs(row.cells) do
        if right[i] then
          cell.attr.classes:insert("r")
        end
      end
    end
  end
  mark(tbl.head.rows)
  for _, body in ipairs(tbl.bodies) do
    mark(body.head)
    mark(body.body)
  end
  mark(tbl.foot.rows)
  return tbl
end

return { Table = compact_alignment }
