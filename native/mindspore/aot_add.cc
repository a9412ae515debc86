// A MindSpore AOT custom operator (ops.Custom("aot_add.so:CustomAdd", ..., func_type="aot")),
// and the ordinary ways it goes wrong, one switch each (the Makefile builds one library per
// switch into build/fixtures/mindspore/):
//   (none)             healthy: extern "C", MindSpore's signature, with CustomAddInit
//   -DAOT_NO_INIT      healthy without the optional CustomAddInit
//   -DAOT_MANGLED      the function is not extern "C": exported as _Z9CustomAddiPPvPiPPlPPKcS_S_
//   -DAOT_BADSIG       not extern "C" and with its own signature (float *, float *, float *, long)
//   -DAOT_INIT_MANGLED CustomAdd is fine, CustomAddInit is not extern "C" (MindSpore skips it)
//   -DAOT_UNDEF        CustomAdd calls a function no library defines (lazy binding: the load
//                      succeeds, the first launch dies with "symbol lookup error")
// MindSpore calls  int f(int nparam, void **params, int *ndims, int64_t **shapes,
//                        const char **dtypes, void *stream, void *extra)
// and, when present, int fInit(int *ndims, int64_t **shapes, const char **dtypes, void *extra).
#include <cstdint>
#include <cstdio>

#if defined(AOT_MANGLED) || defined(AOT_BADSIG)
#define AOT_EXPORT
#else
#define AOT_EXPORT extern "C"
#endif

#ifdef AOT_UNDEF
extern "C" void aot_helper_log(int nparam);  // defined nowhere: the link does not need it
#endif

#ifdef AOT_BADSIG
int CustomAdd(float *a, float *b, float *out, long n) {
  for (long i = 0; i < n; i++) out[i] = a[i] + b[i];
  return 0;
}
#else
AOT_EXPORT int CustomAdd(int nparam, void **params, int *ndims, int64_t **shapes,
                         const char **dtypes, void *stream, void *extra) {
  (void)stream;
  (void)extra;
  (void)dtypes;
#ifdef AOT_UNDEF
  aot_helper_log(nparam);
#endif
  if (nparam != 3) return 1;
  const float *a = static_cast<const float *>(params[0]);
  const float *b = static_cast<const float *>(params[1]);
  float *out = static_cast<float *>(params[2]);
  int64_t n = 1;
  for (int i = 0; i < ndims[2]; i++) n *= shapes[2][i];
  for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
  return 0;
}
#endif

#ifndef AOT_NO_INIT
#ifdef AOT_INIT_MANGLED
int CustomAddInit(int *ndims, int64_t **shapes, const char **dtypes, void *extra) {
#else
extern "C" int CustomAddInit(int *ndims, int64_t **shapes, const char **dtypes, void *extra) {
#endif
  (void)ndims;
  (void)shapes;
  (void)dtypes;
  (void)extra;
  // The tests read this line to tell whether MindSpore called the Init.
  std::fputs("aot_add: CustomAddInit called\n", stderr);
  return 0;
}
#endif
