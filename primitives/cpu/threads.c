#include "../rf_prims.h"
static int g_threads = 1;
void rf_prims_set_threads(int n) { g_threads = n > 0 ? n : 1; }
int rf_prims_threads(void) { return g_threads; }
