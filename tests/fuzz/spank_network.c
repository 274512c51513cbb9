/* spank_network.c - spank/network.c as fuzz_spank builds it: names resolve
 * from the input (the stand-in's getaddrinfo), never through DNS. */
#define getaddrinfo standin_getaddrinfo
#define freeaddrinfo standin_freeaddrinfo
#include "spank/network.c"
