package memsqlite

import "github.com/overseer-dev/overseer/internal/store/sqlite"

// migrations is the schema's history, in order, applied by the store's
// migration runner (versions recorded in schema_migrations). Versions start
// at 1 and increase by one; a released step is never edited, a change is a
// new step with the next version.
var migrations = []sqlite.Migration{
	{Version: 1, Name: "memories with a trigram full-text index", Stmts: []string{
		// tags is a JSON array of strings; key is NULL when the item has
		// none (NULLs never collide in a UNIQUE column); created_at is
		// fixed-width UTC text (see timeFormat), so it sorts as time.
		`CREATE TABLE memories (
			id         INTEGER PRIMARY KEY,
			category   TEXT NOT NULL,
			content    TEXT NOT NULL,
			tags       TEXT NOT NULL DEFAULT '[]',
			key        TEXT UNIQUE,
			source     TEXT NOT NULL DEFAULT '',
			created_at TEXT NOT NULL
		)`,
		`CREATE INDEX memories_created ON memories (created_at, id)`,
		`CREATE INDEX memories_category ON memories (category, created_at, id)`,
		// An external-content index: it stores only the trigrams, the text
		// stays in memories. The triggers keep the two in step inside the
		// writing transaction.
		`CREATE VIRTUAL TABLE memories_fts USING fts5(
			content, tags,
			content = 'memories', content_rowid = 'id',
			tokenize = 'trigram'
		)`,
		`CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
			INSERT INTO memories_fts (rowid, content, tags) VALUES (new.id, new.content, new.tags);
		END`,
		`CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
			INSERT INTO memories_fts (memories_fts, rowid, content, tags) VALUES ('delete', old.id, old.content, old.tags);
		END`,
		`CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
			INSERT INTO memories_fts (memories_fts, rowid, content, tags) VALUES ('delete', old.id, old.content, old.tags);
			INSERT INTO memories_fts (rowid, content, tags) VALUES (new.id, new.content, new.tags);
		END`,
	}},
}

// SchemaVersion is the schema version this program writes.
func SchemaVersion() int { return migrations[len(migrations)-1].Version }
