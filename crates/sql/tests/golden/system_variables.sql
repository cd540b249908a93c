-- The server variables MariaDB's test files ask first, and
-- INFORMATION_SCHEMA.SYSTEM_VARIABLES / PLUGINS as they read them.
SELECT @@log_bin, @@global.log_bin, @@join_cache_level, @@global.concurrent_insert, @@sql_warnings;
SELECT @@optimizer_switch;
SELECT @@global.optimizer_switch = @@session.optimizer_switch;
SET @save_optimizer_switch = @@optimizer_switch;
SET optimizer_switch = @save_optimizer_switch;
SET sql_warnings = 1;
SELECT @@sql_warnings, @@global.sql_warnings;
SET join_cache_level = 4;
SELECT @@join_cache_level, @@global.join_cache_level;
SET join_cache_level = 9;
SELECT @@join_cache_level;
SET GLOBAL log_bin = 1;
SELECT @@session.log_bin;
SELECT COUNT(*) FROM information_schema.system_variables WHERE variable_name = 'have_sanitizer' AND global_value LIKE 'MSAN%';
SELECT variable_name, session_value, global_value, default_value, variable_scope, variable_type, numeric_min_value, numeric_max_value, numeric_block_size, enum_value_list, read_only, command_line_argument, global_value_path FROM information_schema.system_variables WHERE variable_name IN ('autocommit', 'log_bin', 'warning_count', 'sql_notes', 'wait_timeout', 'join_cache_level', 'sql_warnings', 'div_precision_increment', 'net_read_timeout', 'insert_id', 'identity', 'unique_checks') ORDER BY variable_name;
SET sql_notes = 0;
SELECT session_value, global_value FROM information_schema.system_variables WHERE variable_name = 'sql_notes';
SET sql_notes = 1;
SELECT COUNT(*) FROM information_schema.system_variables WHERE variable_name = 'OPTIMIZER_SWITCH' AND session_value LIKE '%semijoin=on%';
SELECT plugin_name, plugin_status, plugin_type, plugin_type_version, plugin_library, load_option, plugin_maturity FROM information_schema.plugins WHERE plugin_name IN ('mysql_native_password');
SELECT COUNT(*) FROM information_schema.plugins WHERE plugin_name = 'no_such_plugin';
SELECT 1;
FLUSH STATUS;
SHOW SESSION STATUS LIKE 'Com_select';
FLUSH LOCAL STATUS;
FLUSH STATUS junk;
