-- Schema version 2: a word-level full-text table for Latin-script text (porter stemming,
-- diacritics removed), kept beside the trigram table and backfilled from existing chunks.
CREATE VIRTUAL TABLE fts_words USING fts5(      -- rowid = chunks.id
  heading, context, content,
  content = '', contentless_delete = 1,
  tokenize = 'porter unicode61 remove_diacritics 2');

INSERT INTO fts_words(rowid, heading, context, content)
  SELECT c.id, coalesce(c.heading, ''), coalesce(c.context_text, ''), c.content
  FROM chunks c;
