--[[ Quarto-style cross-references for plain Pandoc (used by analysis.report.pandoc_render).

Pandoc has no cross-referencing of its own. This filter numbers what Quarto numbers, the way
Quarto's HTML output does, so the offline page reads like the Quarto rendering:

- a Figure whose identifier starts with "fig-" becomes "Figure N" (caption "Figure N: ...");
- a Div whose identifier starts with "tbl-" and holds one Table, followed by its caption as the
  div's last paragraph (Quarto's syntax for a captioned table from an include), becomes
  "Table N": the caption moves onto the table (rendered above it, like Quarto's default);
- every citation @fig-x / @tbl-x becomes a link "Figure N" / "Table N" to its target;
- every table's column alignment becomes classes (table_alignment.lua, loaded from this folder).

Anything that would leave a broken reference is an error (Pandoc exits non-zero): a reference
without a target, a "tbl-" div without a table or a caption, a duplicated identifier, or any
other citation (the report has no bibliography, so a stray @word is a bug in the template).
--]]

local labels = {}
local counts = { fig = 0, tbl = 0 }
local names = { fig = "Figure", tbl = "Table" }

local function fail(msg)
  error("crossref.lua: " .. msg, 0)
end

local function register(kind, id)
  if labels[id] then
    fail("duplicate identifier #" .. id)
  end
  counts[kind] = counts[kind] + 1
  labels[id] = names[kind] .. "\u{a0}" .. tostring(counts[kind])
  return labels[id]
end

local function prefixed(label, inlines)
  local out = pandoc.Inlines({ pandoc.Str(label .. ":"), pandoc.Space() })
  out:extend(inlines)
  return out
end

local function number_figure(fig)
  if not fig.identifier:match("^fig%-") then
    return nil
  end
  local label = register("fig", fig.identifier)
  fig = fig:walk({ Image = function(img)
    local alt = img.attributes["fig-alt"]
    if alt then  -- Quarto's fig-alt is the image's alt text
      img.attributes["fig-alt"] = nil
      img.caption = pandoc.Inlines({ pandoc.Str(alt) })
      return img
    end
  end })
  local caption = pandoc.utils.blocks_to_inlines(fig.caption.long)
  fig.caption.long = pandoc.Blocks({ pandoc.Plain(prefixed(label, caption)) })
  return fig
end

local function number_table(div)
  if not div.identifier:match("^tbl%-") then
    return nil
  end
  local blocks = div.content
  local last = blocks[#blocks]
  if #blocks < 2 or last.t ~= "Para" then
    fail("#" .. div.identifier .. " needs its caption as the div's last paragraph")
  end
  local tables = {}
  for _, b in ipairs(blocks) do
    if b.t == "Table" then
      table.insert(tables, b)
    end
  end
  if #tables ~= 1 then
    fail("#" .. div.identifier .. " must hold exactly one table, found " .. tostring(#tables))
  end
  local label = register("tbl", div.identifier)
  tables[1].caption.long = pandoc.Blocks({ pandoc.Plain(prefixed(label, last.content)) })
  blocks:remove(#blocks)
  div.content = blocks
  return div
end

local function resolve(cite)
  local out = pandoc.Inlines({})
  for i, c in ipairs(cite.citations) do
    local label = labels[c.id]
    if not label then
      fail("reference @" .. c.id .. " has no target in the document")
    end
    if i > 1 then
      out:extend({ pandoc.Str(","), pandoc.Space() })
    end
    out:insert(pandoc.Link(label, "#" .. c.id))
  end
  return out
end

-- Tables get their alignment classes (table_alignment.lua) in the numbering pass: one walk over
-- the document for figures, "tbl-" divs and tables, one more for citations (which may point
-- forward, so every label must be known first). Each walk costs a full round trip of the
-- document through Lua; the filter used to make three.
local alignment = dofile(pandoc.path.join({ pandoc.path.directory(PANDOC_SCRIPT_FILE), "table_alignment.lua" }))

function Pandoc(doc)
  doc = doc:walk({ traverse = "topdown", Figure = number_figure, Div = number_table, Table = alignment.Table })
  return doc:walk({ Cite = resolve })
end
