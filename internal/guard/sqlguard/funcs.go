package sqlguard

import "strings"

// Functions known to have effects beyond reading. Names are matched without
// their schema and lower-cased. User-defined functions cannot be judged by
// name; RunReadOnly is the defence against those.
var (
	writeFuncs = setOf(
		"nextval", "setval",
		"lo_import", "lo_unlink", "lo_create", "lo_creat", "lo_put", "lo_from_bytea",
		"lo_truncate", "lo_truncate64", "lowrite", "lo_open",
	)
	adminFuncs = setOf(
		"set_config", "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile",
		"pg_log_backend_memory_contexts", "pg_promote", "pg_switch_wal", "pg_create_restore_point",
		"pg_backup_start", "pg_backup_stop", "pg_start_backup", "pg_stop_backup",
		"pg_wal_replay_pause", "pg_wal_replay_resume", "pg_notify", "pg_import_system_collations",
		"pg_read_file", "pg_read_binary_file", "pg_stat_file", "pg_ls_dir", "pg_logdir_ls",
		"lo_export", "pg_stat_statements_reset", "pg_sleep", "pg_sleep_for", "pg_sleep_until",
		"setseed",
	)
	// hostFuncs reach past the database, into the files, the environment
	// or the code of the machine it runs on: SQLite's fileio functions
	// (the sqlite3 shell and the extensions bundling it) and extension
	// loading, and DuckDB's file readers. SQL tools built on those engines
	// parse as PostgreSQL, where these names are plain function calls, and
	// would read a private key or Overseer's token, or write over its
	// database, as "a single read".
	hostFuncs = setOf(
		// SQLite
		"readfile", "writefile", "edit", "fsdir", "lsdir", "load_extension", "fts3_tokenizer", "zipfile",
		// DuckDB
		"read_text", "read_blob", "read_csv", "read_csv_auto", "read_json", "read_json_auto",
		"read_json_objects", "read_json_objects_auto", "read_ndjson", "read_ndjson_auto", "read_ndjson_objects",
		"read_parquet", "parquet_scan", "parquet_metadata", "parquet_schema", "parquet_file_metadata",
		"parquet_kv_metadata", "read_xlsx", "sniff_csv", "glob", "st_read", "st_read_meta", "getenv",
		"sqlite_scan", "sqlite_attach", "postgres_scan", "postgres_attach", "mysql_scan",
		"iceberg_scan", "iceberg_metadata", "delta_scan", "read_avro",
	)
	// dynamicFuncs run SQL given as text, which the classifier cannot see.
	dynamicFuncs = setOf(
		"query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema",
		"cursor_to_xml", "cursor_to_xmlschema",
		"table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema",
		"schema_to_xml", "schema_to_xmlschema", "schema_to_xml_and_xmlschema",
		"database_to_xml", "database_to_xmlschema", "database_to_xml_and_xmlschema",
		"ts_stat", "crosstab", "crosstab2", "crosstab3", "crosstab4", "connectby",
	)
	adminFuncPrefixes = []string{
		"pg_advisory_", "pg_try_advisory_", "pg_stat_reset", "pg_replication_origin_",
		"pg_create_physical_replication_slot", "pg_create_logical_replication_slot",
		"pg_drop_replication_slot", "pg_copy_", "pg_replication_slot_advance", "pg_logical_",
		"pg_ls_", "pg_file_",
	}
)

// funcClass classifies a call of the function name (lower-case, no schema)
// and says why when it is not a read.
func funcClass(name string) (Class, string) {
	switch {
	case writeFuncs[name]:
		return Write, "changes data"
	case adminFuncs[name]:
		return Admin, "acts on the session, the server or its files"
	case hostFuncs[name]:
		return Admin, "reads or writes files, the environment or code of the database's machine"
	case dynamicFuncs[name], strings.HasPrefix(name, "dblink"):
		return Unknown, "runs SQL given as text, which cannot be checked"
	}
	for _, p := range adminFuncPrefixes {
		if strings.HasPrefix(name, p) {
			return Admin, "acts on the session, the server or its files"
		}
	}
	return Read, ""
}
