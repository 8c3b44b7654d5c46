#include "static_runtime/static_method.h"

#include "static_runtime/static_module.h"

namespace srt {

StaticMethod::StaticMethod(std::shared_ptr<const StaticModule> module)
    : module_(std::move(module)) {
  TORCH_CHECK(module_ != nullptr, "StaticMethod: module must not be null");
  name_ = module_->schema().name();
}

c10::IValue StaticMethod::operator()(std::vector<c10::IValue> args, const IValueMap& kwargs) const {
  return (*module_)(std::move(args), kwargs);
}

const std::string& StaticMethod::name() const {
  return name_;
}

void StaticMethod::setArgumentNames(std::vector<std::string>& argument_names) const {
  for (const c10::Argument& argument : module_->schema().arguments()) {
    argument_names.push_back(argument.name());
  }
}

} // namespace srt
