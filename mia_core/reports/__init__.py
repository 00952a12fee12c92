"""What a run shows: result tables and the self-contained HTML report (:mod:`.report`), and the plotly figures
shared by the pages and the report (:mod:`.plots`). Imported as submodules (``from mia_core.reports import
plots``): nothing is loaded here."""
