// A minimal stand-in for OneFlow's user-op registry headers (oneflow/core/framework/
// user_op_registry_manager.h and friends): the same namespaces, class names and member
// signatures, so a library compiled against it carries the same ELF markers as one compiled
// against OneFlow (the UserOpRegisterTrigger<OpRegistry> / <OpKernelRegistry> statics, imports of
// UserOpRegistryMgr::CheckAndGetOpRegistry / CheckAndGetOpKernelRegistry, typeinfo for
// oneflow::user_op::OpKernel). It is NOT OneFlow: no OneFlow runtime is involved anywhere.
#ifndef OPDOCTOR_ONEFLOW_MIN_H_
#define OPDOCTOR_ONEFLOW_MIN_H_

#include <string>

namespace oneflow {
namespace user_op {

class KernelComputeContext;

class OpKernel {
 public:
  virtual ~OpKernel();
  virtual void Compute(KernelComputeContext *ctx) const = 0;
};

struct OpRegistryResult {
  std::string op_type_name;
};

class OpRegistry {
 public:
  OpRegistry &Name(const std::string &op_type_name);
  OpRegistry &Input(const std::string &name);
  OpRegistry &Output(const std::string &name);
  OpRegistry &Finish();
  OpRegistryResult GetResult();
};

class OpKernelRegistry {
 public:
  OpKernelRegistry &Name(const std::string &op_type_name);
  OpKernelRegistry &SetCreateFn(OpKernel *(*fn)());
  OpKernelRegistry &Finish();
  OpRegistryResult GetResult();
};

class UserOpRegistryMgr {
 public:
  static UserOpRegistryMgr &Get();
  OpRegistry CheckAndGetOpRegistry(const std::string &op_type_name);
  OpKernelRegistry CheckAndGetOpKernelRegistry(const std::string &op_type_name);
  void Register(OpRegistryResult result);
};

template <typename RegistryT>
struct UserOpRegisterTrigger final {
  UserOpRegisterTrigger(RegistryT &registry) {  // NOLINT: the macro relies on the conversion
    UserOpRegistryMgr::Get().Register(registry.Finish().GetResult());
  }
};

}  // namespace user_op
}  // namespace oneflow

#define OPDOCTOR_CAT2(a, b) a##b
#define OPDOCTOR_CAT(a, b) OPDOCTOR_CAT2(a, b)
// The expansions of OneFlow's macros (user_op_registry_manager.h).
#define REGISTER_USER_OP(name)                                                          \
  static ::oneflow::user_op::UserOpRegisterTrigger<::oneflow::user_op::OpRegistry>      \
      OPDOCTOR_CAT(g_register_trigger, __COUNTER__) =                                   \
          ::oneflow::user_op::UserOpRegistryMgr::Get().CheckAndGetOpRegistry(name)
#define REGISTER_USER_KERNEL(name)                                                      \
  static ::oneflow::user_op::UserOpRegisterTrigger<::oneflow::user_op::OpKernelRegistry> \
      OPDOCTOR_CAT(g_register_trigger, __COUNTER__) =                                   \
          ::oneflow::user_op::UserOpRegistryMgr::Get().CheckAndGetOpKernelRegistry(name)

#endif  // OPDOCTOR_ONEFLOW_MIN_H_
