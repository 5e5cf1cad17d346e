-- Schema version 5: several vectors per chunk (index.md §4). A chunk longer than the model's
-- window keeps its first piece's vector in vec_chunks (unchanged) and gets one row here per
-- extra piece. `chunks.pieces` is how many vectors the chunk has once phase 2 stored them all;
-- NULL means the chunk is pending. Chunks indexed before this version are complete when they
-- have a vector and are clearly shorter than the window (content tokens + 32 for the prefix
-- and special tokens, off context mode); the rest are pending, and the next `groove index`
-- counts their tokens and embeds only their extra pieces.
ALTER TABLE chunks ADD COLUMN pieces INTEGER;
UPDATE chunks SET pieces = 1
 WHERE token_count IS NOT NULL
   AND token_count + 32 <= coalesce((SELECT CAST(value AS INTEGER) FROM index_meta
                                     WHERE key = 'embedding_max_length'), 0)
   AND coalesce((SELECT value FROM index_meta WHERE key = 'context_mode'), 'off') = 'off';
CREATE TABLE chunk_pieces (
  chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
  piece INTEGER NOT NULL,                -- 1, 2, …: piece 0 is the chunk's vec_chunks row
  embedding BLOB NOT NULL,               -- little-endian float32
  PRIMARY KEY (chunk_id, piece)) WITHOUT ROWID;
