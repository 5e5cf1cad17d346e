-- Schema version 4: where each chunk sits in its file (1-based lines), so a hit can be opened
-- at `path:line` and printed by `groove get`. NULL for chunks indexed before this version: the
-- chunker's version was raised with it, so the next `groove index` re-reads every file and
-- fills them in (without re-embedding unchanged chunks).
ALTER TABLE chunks ADD COLUMN line_start INTEGER;
ALTER TABLE chunks ADD COLUMN line_end INTEGER;
