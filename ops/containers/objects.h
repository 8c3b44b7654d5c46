// Instances of TorchScript classes a forward creates and keeps: records such as torchvision's
// LevelMapper, which MultiScaleRoIAlign builds on its first call and keeps on itself
// (`self.map_levels`, an attribute cell across runs). prim::CreateObject makes one, prim::GetAttr
// and prim::SetAttr read and write its attributes. Modules are not objects here: their attributes
// are folded by freezing or become cells (passes/attribute_writes.cpp).
#pragma once

namespace torch::jit {
class Node;
} // namespace torch::jit

namespace srt::ops {

// Whether `node` is a prim::CreateObject of a TorchScript class, or a prim::GetAttr /
// prim::SetAttr on an instance of one, not on a module.
bool accessesAnObject(const torch::jit::Node* node);

} // namespace srt::ops
