// A stub liboneflow.so defining the registry API of oneflow_min.h (old C++ ABI, as OneFlow's
// wheels are built), so that fixtures can link against "OneFlow" and resolve. Not OneFlow.
#include "oneflow_min.h"

namespace oneflow {
namespace user_op {
OpKernel::~OpKernel() {}
OpRegistry &OpRegistry::Name(const std::string &) { return *this; }
OpRegistry &OpRegistry::Input(const std::string &) { return *this; }
OpRegistry &OpRegistry::Output(const std::string &) { return *this; }
OpRegistry &OpRegistry::Finish() { return *this; }
OpRegistryResult OpRegistry::GetResult() { return {}; }
OpKernelRegistry &OpKernelRegistry::Name(const std::string &) { return *this; }
OpKernelRegistry &OpKernelRegistry::SetCreateFn(OpKernel *(*)()) { return *this; }
OpKernelRegistry &OpKernelRegistry::Finish() { return *this; }
OpRegistryResult OpKernelRegistry::GetResult() { return {}; }
UserOpRegistryMgr &UserOpRegistryMgr::Get() {
  static UserOpRegistryMgr mgr;
  return mgr;
}
OpRegistry UserOpRegistryMgr::CheckAndGetOpRegistry(const std::string &) { return {}; }
OpKernelRegistry UserOpRegistryMgr::CheckAndGetOpKernelRegistry(const std::string &) {
  return {};
}
void UserOpRegistryMgr::Register(OpRegistryResult) {}
}  // namespace user_op
}  // namespace oneflow
