-- Schema version 3: a word-level full-text table for Japanese and other CJK text (issue #13).
-- Its columns hold groove's own tokens (CJK character unigrams + bigrams, NFKC-folded words and
-- numbers; groove_cli/retrieve/cjk.py), space-separated, so unicode61 keeps each token whole.
-- groove_cjk() is that tokeniser, registered on every connection groove opens; the backfill
-- re-reads the stored chunk text, no document is re-read and nothing is re-embedded.
CREATE VIRTUAL TABLE fts_cjk USING fts5(        -- rowid = chunks.id
  heading, context, content,
  content = '', contentless_delete = 1,
  tokenize = 'unicode61 remove_diacritics 0');

INSERT INTO fts_cjk(rowid, heading, context, content)
  SELECT c.id, groove_cjk(c.heading), groove_cjk(c.context_text), groove_cjk(c.content)
  FROM chunks c;

INSERT OR REPLACE INTO index_meta(key, value) VALUES ('cjk_tokeniser_version', '1');
