/* Placeholder; the runtime helper writes the real command line. */
#include <stdio.h>
int main(void) { fputs("redfox: not built yet\n", stderr); return 1; }
