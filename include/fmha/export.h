// Symbol visibility of the public API: the shared library exports what is marked FMHA_API
// and hides everything else (it is built with hidden default visibility).
#pragma once

#if defined(_WIN32)
#define FMHA_API
#else
#define FMHA_API __attribute__((visibility("default")))
#endif
