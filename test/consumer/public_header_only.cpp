// Only the public header: what it pulls in is what a user of the installed package sees.
#include <static_runtime/static_runtime.h>
