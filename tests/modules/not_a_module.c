/* not_a_module: a valid shared object without gearbox_module_init(). */
int not_a_module(void) { return 42; }
