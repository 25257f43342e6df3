"""The report: jinja2 templates -> report/_quarto.yml + report/index.qmd, and an offline HTML page.

Cheap to import; the pipeline and renderers live in submodules.
"""
