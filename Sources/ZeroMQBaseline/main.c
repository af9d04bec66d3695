#include <zmq.h>
#include <stdio.h>
int main(void) { int a, b, c; zmq_version(&a, &b, &c); printf("%d.%d.%d\n", a, b, c); return 0; }
