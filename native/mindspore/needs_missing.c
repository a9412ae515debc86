/* A MindSpore AOT operator that links a helper library (libaot_helper.so) which is not on the
 * loader's search path at run time: dlopen fails, and MindSpore reports it only in its log. */
#include <stdint.h>

int aot_helper_scale(void);

int CustomAdd(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
              void *stream, void *extra) {
  (void)dtypes;
  (void)stream;
  (void)extra;
  if (nparam != 3) return 1;
  const float *a = (const float *)params[0];
  const float *b = (const float *)params[1];
  float *out = (float *)params[2];
  int64_t n = 1;
  for (int i = 0; i < ndims[2]; i++) n *= shapes[2][i];
  for (int64_t i = 0; i < n; i++) out[i] = (a[i] + b[i]) * (float)aot_helper_scale();
  return 0;
}
