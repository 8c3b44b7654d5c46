// StaticMethod: a StaticModule behind LibTorch's portable torch::IMethod interface.
#pragma once

#include <memory>
#include <string>

#include <torch/csrc/api/include/torch/imethod.h>

namespace srt {

class StaticModule;

class StaticMethod : public torch::IMethod {
public:
  // Shares ownership of the module; calls are thread-safe like StaticModule::operator().
  explicit StaticMethod(std::shared_ptr<const StaticModule> module);

  c10::IValue operator()(std::vector<c10::IValue> args,
                         const IValueMap& kwargs = IValueMap()) const override;
  const std::string& name() const override;

protected:
  void setArgumentNames(std::vector<std::string>& argument_names) const override;

private:
  std::shared_ptr<const StaticModule> module_;
  std::string name_;
};

} // namespace srt
