/* linked.c - how this doctor was linked: the one source each program
 * compiles for itself, so that the static build (DOCTOR_STATIC) shares every
 * other object with the dynamic one. */
#include "doctor.h"

#ifdef DOCTOR_STATIC
const bool doctor_linked_static = true;
#else
const bool doctor_linked_static = false;
#endif
