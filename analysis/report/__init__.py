"""The report: jinja2 templates -> report/index.qmd + report/_quarto.yml (Quarto), and the offline page
report/index.html (the same index.qmd rendered by Pandoc, analysis.report.pandoc_render).

Cheap to import; the pipeline and renderers live in submodules.
"""
