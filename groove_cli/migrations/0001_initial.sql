-- Schema version 1 (index.md §9). vec_chunks is created once the embedding dimension is known.
CREATE TABLE index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE documents (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  path TEXT NOT NULL UNIQUE,
  title TEXT, topic TEXT, category TEXT, depth TEXT,
  tags TEXT NOT NULL DEFAULT '[]',
  date TEXT,
  content_hash TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  last_indexed TEXT NOT NULL);

CREATE TABLE chunks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  chunk_index INTEGER NOT NULL,
  heading TEXT, level INTEGER,
  ancestry TEXT NOT NULL DEFAULT '[]',
  content TEXT NOT NULL,
  context_text TEXT,
  token_count INTEGER,
  quality_score REAL NOT NULL,
  UNIQUE (document_id, chunk_index));
CREATE INDEX idx_chunks_quality ON chunks(quality_score);

CREATE VIRTUAL TABLE fts_chunks USING fts5(
  heading, context, content,
  content = '', contentless_delete = 1,
  tokenize = 'trigram remove_diacritics 1 case_sensitive 0');

CREATE TABLE query_cache (
  key TEXT PRIMARY KEY,
  embedding BLOB NOT NULL,
  created TEXT NOT NULL);
