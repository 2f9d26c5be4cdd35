// Package sqlguard is the SQL guard: it classifies SQL with PostgreSQL's own
// parser and keeps read-only SQL tools read-only.
package sqlguard
