"""Search pipeline stages: query compilation, fusion, MMR, expansion, spans, filters (search.md)."""
