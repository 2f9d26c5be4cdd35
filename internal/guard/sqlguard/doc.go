// Package sqlguard is the SQL guard. It classifies SQL with PostgreSQL's own
// parser (compiled to WebAssembly, pure Go, loaded on first use) by walking
// the parse tree, never by matching strings, and keeps read-only SQL tools
// read-only.
//
// Classify and Analyze put SQL text into a Class: Read (exactly one
// statement that only reads), Write, DDL, Admin, Multiple or Unknown. Text
// that does not parse, is empty, too large, too deeply nested, or uses a
// construct the classifier does not know is Unknown, never Read. Guard
// turns the class into findings for the firewall: for sql_query (and any
// tool configured as read-only) anything but a read is a hard block; for
// other SQL tools writes need a confirmation and schema changes,
// administration and several statements an approval. An optional table
// allow-list blocks SQL that touches other tables.
//
// The classifier judges functions only by name, so a user-defined function
// that writes looks like a read. RunReadOnly is the second line: it runs a
// query in a transaction the database keeps read-only, so a write the
// classifier missed fails in the database. ExecCAS performs
// optimistic-locking updates for tools that write, and ForceLimit caps the
// rows a read returns.
package sqlguard
