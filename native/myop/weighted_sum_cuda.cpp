// CUDA dispatch registration for myop::weighted_sum. The device code is in weighted_sum_kernel.cu
// (compiled by nvcc); this file only needs torch headers, so it also builds where torch is CPU-only.
#include <torch/library.h>
#include <ATen/ATen.h>
#include <cstdint>

extern "C" int myop_weighted_sum_launch(float* out, const float* x1, const float* x2, float alpha,
                                        std::int64_t n);

namespace myop {

at::Tensor weighted_sum_cuda(const at::Tensor& x1, const at::Tensor& x2, double alpha) {
  TORCH_CHECK(x1.sizes() == x2.sizes(), "weighted_sum: x1 and x2 must have the same shape");
  TORCH_CHECK(x1.is_cuda() && x2.is_cuda(), "weighted_sum_cuda: CUDA tensors expected");
  TORCH_CHECK(x1.scalar_type() == at::kFloat && x2.scalar_type() == at::kFloat,
              "weighted_sum_cuda: float32 tensors expected");
  auto a = x1.contiguous();
  auto b = x2.contiguous();
  auto out = at::empty_like(a);
  int err = myop_weighted_sum_launch(out.data_ptr<float>(), a.data_ptr<float>(), b.data_ptr<float>(),
                                     static_cast<float>(alpha), a.numel());
  TORCH_CHECK(err == 0, "weighted_sum_cuda: kernel launch failed with CUDA error ", err);
  return out;
}

}  // namespace myop

#ifndef MYOP_NO_REGISTRATION
TORCH_LIBRARY_IMPL(myop, CUDA, m) {
  m.impl("weighted_sum", &myop::weighted_sum_cuda);
}
#endif
