// A OneFlow user op library ("my_relu"), compiled against oneflow_min.h (see there: no OneFlow
// runtime). Switches, one library each (the Makefile builds them into build/fixtures/oneflow/):
//   (none)         REGISTER_USER_OP + REGISTER_USER_KERNEL, old C++ ABI, links liboneflow.so
//   -DOF_NO_KERNEL the op without a kernel ("Cannot find the kernel matching Current OperatorConf")
//   ABI=1 build    the same source with -D_GLIBCXX_USE_CXX11_ABI=1 (OneFlow uses 0)
//   no -loneflow   linked without OneFlow's library: typeinfo for OpKernel stays undefined
#include "oneflow_min.h"

namespace {

class MyReluKernel final : public oneflow::user_op::OpKernel {
 public:
  void Compute(oneflow::user_op::KernelComputeContext *) const override {}
};

oneflow::user_op::OpKernel *CreateMyRelu() { return new MyReluKernel(); }

}  // namespace

REGISTER_USER_OP("my_relu").Input("in").Output("out");

#ifndef OF_NO_KERNEL
REGISTER_USER_KERNEL("my_relu").SetCreateFn(&CreateMyRelu);
#else
void *keep_create_fn = reinterpret_cast<void *>(&CreateMyRelu);
#endif
