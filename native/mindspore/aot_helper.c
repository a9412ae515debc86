/* The helper library needs_missing.so links; built into a directory the loader never searches. */
int aot_helper_scale(void) { return 1; }
