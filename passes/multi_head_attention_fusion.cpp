// multi_head_attention_fusion: a whole multi-head attention block, from the normalized input x to
// the merged heads out_proj reads, becomes srt::multi_head_attention (ops/attention/attention.cpp):
//
//   q, k, v = the QKV projection of x, heads split     (any of the spellings below)
//   a = srt::attention(q, k, v, mask, scale, fills)    (attention_fusion)
//   a merged back to [batch, seq, D]
//     ->  srt::multi_head_attention(x, W, b, H, mask, scale, fills, causal)
//
// with W the [3D, Din] rows of q, k and v in that order, so the projection is one
// [B*S, Din] x [Din, 3D] GEMM whose result the kernel reads in place. Projections:
//   three linears on x                          linear(x, Wq, bq)
//   one linear, split on the last dim           linear(x, W).split(D, -1) / .chunk(3, -1) / [...,
//   a:b] each .view/.reshape(B, T, H, Dh) then .permute(0, 2, 1, 3) or .transpose(1, 2) or one
//   linear as five dims                  linear(x, W).reshape(B, T, 3, H, Dh)
//                                               .permute(2, 0, 3, 1, 4) then .unbind(0) or [i]
// Merges: .permute(0, 2, 1, 3) or .transpose(1, 2), then .reshape(B, T, D) or
// .contiguous().view(B, T, D) (D or -1).
// A filling mask that is provably causal over T = x's seq (GPT-2's tril buffer sliced [:T, :T] ==
// 0, tril(ones(T, T)) == 0, triu(ones(T, T, dtype=bool), 1)) becomes the kernel's causal flag.
// B and T must provably be x's first two sizes, H and Dh (possibly `C // H` of x's size C: proven
// through passes/shape_facts.h) multiply to D, and the weights are constants. Every intermediate
// is read only inside the pattern (sizes of a projection's first two dims are read from x
// instead), all in one block, and nothing writes x or the weights; else the graph keeps its
// srt::attention.
#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <vector>

#include <ATen/Functions.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"
#include "passes/rewrite_safety.h"
#include "passes/shape_facts.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

const char* const kView = "aten::view(Tensor(a) self, int[] size) -> Tensor(a)";
const char* const kReshape = "aten::reshape(Tensor(a) self, int[] shape) -> Tensor(a)";
const char* const kPermute = "aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)";
const char* const kTranspose =
    "aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)";
const char* const kContiguous = "aten::contiguous(Tensor(a) self, *, MemoryFormat "
                                "memory_format=contiguous_format) -> Tensor(a)";
const char* const kLinear =
    "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor";
const char* const kSize = "aten::size.int(Tensor self, int dim) -> int";

std::optional<int64_t> constantInt(const Value* value) {
  const auto constant = torch::jit::toIValue(value);
  if (!constant || !constant->isInt()) {
    return std::nullopt;
  }
  return constant->toInt();
}

// A constant tensor input (frozen weights are prim::Constant tensors).
std::optional<at::Tensor> constantTensor(const Value* value) {
  const auto constant = torch::jit::toIValue(value);
  if (!constant || !constant->isTensor()) {
    return std::nullopt;
  }
  return constant->toTensor();
}

// permute(0, 2, 1, 3) of a 4-D tensor, or transpose(1, 2), the same thing; returns its input.
Value* swappedHeadsAndSeq(Node* node) {
  if (node->matches(kPermute)) {
    const auto dims = torch::jit::toIValue(node->input(1));
    if (!dims || !dims->isIntList()) {
      return nullptr;
    }
    std::vector<int64_t> list = dims->toIntVector();
    if (list.size() != 4) {
      return nullptr;
    }
    for (int64_t& d : list) {
      d = d < 0 ? d + 4 : d;
    }
    return list == std::vector<int64_t>{0, 2, 1, 3} ? node->input(0) : nullptr;
  }
  if (node->matches(kTranspose)) {
    // Only called on 4-D values (a 4-entry view, or srt::attention of 4-D heads).
    auto d0 = constantInt(node->input(1));
    auto d1 = constantInt(node->input(2));
    if (!d0 || !d1) {
      return nullptr;
    }
    *d0 = *d0 < 0 ? *d0 + 4 : *d0;
    *d1 = *d1 < 0 ? *d1 + 4 : *d1;
    return std::min(*d0, *d1) == 1 && std::max(*d0, *d1) == 2 ? node->input(0) : nullptr;
  }
  return nullptr;
}

// The size list of a view/reshape, as values (a prim::ListConstruct), else empty.
std::vector<Value*> sizeEntries(Value* list) {
  if (list->node()->kind() != c10::prim::ListConstruct) {
    return {};
  }
  const auto inputs = list->node()->inputs();
  return {inputs.begin(), inputs.end()};
}

bool isViewOrReshape(const Node* node) {
  return node->matches(kView) || node->matches(kReshape);
}

// Where one of q, k, v comes from: rows [row_begin, row_begin + D) of a linear's output, split
// into heads.
struct HeadSource {
  Node* linear = nullptr;
  int64_t row_begin = 0;
  int64_t heads = 0;
  int64_t head_dim = 0;
  std::array<Value*, 2> batch_seq{}; // the sizes the split uses for x's first two dims
  std::vector<Node*> nodes;          // the nodes between the linear and the attention
};

// A linear with a constant [rows, Din] weight (and a constant or no bias).
bool isConstantLinear(const Node* node) {
  if (!node->matches(kLinear)) {
    return false;
  }
  const std::optional<at::Tensor> weight = constantTensor(node->input(1));
  if (!weight || weight->dim() != 2) {
    return false;
  }
  const Value* bias = node->input(2);
  if (bias->type()->kind() == c10::TypeKind::NoneType) {
    return true;
  }
  const std::optional<at::Tensor> b = constantTensor(bias);
  return b && b->dim() == 1 && b->size(0) == weight->size(0) &&
         b->scalar_type() == weight->scalar_type();
}

// Whether a slice is t[:] along its dim (start None or 0, end None or the largest int, step 1),
// which TorchScript emits for each leading `:` of `t[:, :, a:b]`.
bool isFullSlice(const Node* node) {
  if (node->kind() != c10::aten::slice || node->inputs().size() != 5) {
    return false;
  }
  const bool from_start =
      node->input(2)->type()->kind() == c10::TypeKind::NoneType || constantInt(node->input(2)) == 0;
  const bool to_end = node->input(3)->type()->kind() == c10::TypeKind::NoneType ||
                      constantInt(node->input(3)) == std::numeric_limits<int64_t>::max();
  return from_start && to_end && constantInt(node->input(4)) == 1;
}

// `value` with its full slices looked through (recorded in `nodes`, when given).
Value* throughFullSlices(Value* value, std::vector<Node*>* nodes = nullptr) {
  while (isFullSlice(value->node())) {
    if (nodes != nullptr) {
      nodes->push_back(value->node());
    }
    value = value->node()->input(0);
  }
  return value;
}

// `piece` as rows of a constant linear's output along its last dim: the output itself, a piece
// of split/chunk (prim::ListUnpack), or a slice with step 1. Sets the linear and the first row.
bool rowsOfLinear(Value* piece, HeadSource& source) {
  Node* node = piece->node();
  if (isConstantLinear(node)) {
    source.linear = node;
    source.row_begin = 0;
    return true;
  }
  Value* whole = nullptr;
  if (node->kind() == c10::prim::ListUnpack) {
    Node* split = node->input(0)->node();
    const bool splits = split->kind() == c10::aten::split || split->kind() == c10::aten::chunk ||
                        split->kind() == symbol("aten::unsafe_split") ||
                        split->kind() == symbol("aten::unsafe_chunk");
    if (!splits || split->inputs().size() != 3 ||
        split->input(0)->type()->kind() != c10::TypeKind::TensorType) {
      return false;
    }
    whole = split->input(0);
    const std::optional<int64_t> rank = knownRank(whole);
    const std::optional<int64_t> dim = constantInt(split->input(2));
    const std::optional<int64_t> each = knownSize(node->output(0), -1);
    const bool last = dim && (*dim == -1 || (rank && normalizedDim(*dim, rank) == *rank - 1));
    if (!last || !each || node->input(0)->uses().size() != 1) {
      return false;
    }
    // Pieces before this one are all `each` wide (only the last of a split may be shorter).
    source.row_begin = static_cast<int64_t>(piece->offset()) * *each;
    source.nodes.push_back(node);
    source.nodes.push_back(split);
  } else if (node->kind() == c10::aten::slice && node->inputs().size() == 5) {
    whole = node->input(0);
    const std::optional<int64_t> rank = knownRank(whole);
    const std::optional<int64_t> dim = constantInt(node->input(1));
    const std::optional<int64_t> start =
        node->input(2)->type()->kind() == c10::TypeKind::NoneType ? 0 : knownInt(node->input(2));
    const std::optional<int64_t> step = constantInt(node->input(4));
    const bool last = dim && (*dim == -1 || (rank && normalizedDim(*dim, rank) == *rank - 1));
    if (!last || !start || *start < 0 || step != 1) {
      return false;
    }
    source.row_begin = *start;
    source.nodes.push_back(node);
  } else {
    return false;
  }
  whole = throughFullSlices(whole, &source.nodes);
  if (!isConstantLinear(whole->node())) {
    return false;
  }
  source.linear = whole->node();
  return true;
}

// q (or k, v) = rows.view(B, T, H, Dh).permute(0, 2, 1, 3) (or .transpose(1, 2)).
std::optional<HeadSource> viewedHeads(Value* heads) {
  HeadSource source;
  Node* permute = heads->node();
  Value* viewed = swappedHeadsAndSeq(permute);
  if (viewed == nullptr || !isViewOrReshape(viewed->node())) {
    return std::nullopt;
  }
  Node* view = viewed->node();
  const std::vector<Value*> sizes = sizeEntries(view->input(1));
  source.nodes = {permute, view};
  if (sizes.size() != 4 || !rowsOfLinear(view->input(0), source)) {
    return std::nullopt;
  }
  const std::optional<int64_t> width = knownSize(view->input(0), -1);
  std::optional<int64_t> h = knownInt(sizes[2]);
  std::optional<int64_t> dh = knownInt(sizes[3]);
  if (!width || !h || !dh || (*h == -1 && *dh == -1)) {
    return std::nullopt;
  }
  if (*h == -1 && *dh > 0 && *width % *dh == 0) {
    h = *width / *dh;
  } else if (*dh == -1 && *h > 0 && *width % *h == 0) {
    dh = *width / *h;
  }
  if (*h <= 0 || *dh <= 0 || *h * *dh != *width) {
    return std::nullopt;
  }
  source.heads = *h;
  source.head_dim = *dh;
  source.batch_seq = {sizes[0], sizes[1]};
  return source;
}

// q (or k, v) = the i-th of linear(x, W).reshape(B, T, 3, H, Dh).permute(2, 0, 3, 1, 4), taken by
// unbind(0) or select(0, i).
std::optional<HeadSource> packedHeads(Value* heads) {
  HeadSource source;
  Node* take = heads->node();
  Value* packed = nullptr;
  int64_t index = 0;
  if (take->kind() == c10::prim::ListUnpack && take->outputs().size() == 3 &&
      take->input(0)->node()->kind() == c10::aten::unbind &&
      constantInt(take->input(0)->node()->input(1)) == 0 && take->input(0)->uses().size() == 1) {
    packed = take->input(0)->node()->input(0);
    index = static_cast<int64_t>(heads->offset());
    source.nodes = {take, take->input(0)->node()};
  } else if (take->matches("aten::select.int(Tensor(a) self, int dim, int index) -> Tensor(a)") &&
             constantInt(take->input(1)) == 0 && constantInt(take->input(2))) {
    packed = take->input(0);
    index = *constantInt(take->input(2));
    source.nodes = {take};
  } else {
    return std::nullopt;
  }
  Node* permute = packed->node();
  if (!permute->matches(kPermute) ||
      constantIntList(permute->input(1)) != std::vector<int64_t>{2, 0, 3, 1, 4}) {
    return std::nullopt;
  }
  Node* reshape = permute->input(0)->node();
  const std::vector<Value*> sizes =
      isViewOrReshape(reshape) ? sizeEntries(reshape->input(1)) : std::vector<Value*>{};
  if (sizes.size() != 5 || knownInt(sizes[2]) != 3 || index < 0 || index > 2 ||
      !isConstantLinear(reshape->input(0)->node())) {
    return std::nullopt;
  }
  source.nodes.push_back(permute);
  source.nodes.push_back(reshape);
  source.linear = reshape->input(0)->node();
  const int64_t width = constantTensor(source.linear->input(1))->size(0);
  const std::optional<int64_t> h = knownInt(sizes[3]);
  const std::optional<int64_t> dh = knownInt(sizes[4]);
  if (!h || !dh || *h <= 0 || *dh <= 0 || 3 * *h * *dh != width) {
    return std::nullopt;
  }
  source.heads = *h;
  source.head_dim = *dh;
  source.row_begin = index * *h * *dh;
  source.batch_seq = {sizes[0], sizes[1]};
  return source;
}

struct MhaMatch {
  Node* attention = nullptr;
  Node* merge = nullptr;
  std::vector<Node*> merge_nodes;    // attention output to the merge, exclusive
  std::array<HeadSource, 3> sources; // q, k, v
  Value* x = nullptr;
  int64_t d_model = 0;
  int64_t heads = 0;
  bool causal = false; // the mask is the causal one: dropped for the kernel's causal flag
};

// Whether `tensor`'s first two sizes are provably x's: x itself, or reached from x through
// linears and ops that keep the leading dims (layer_norm, pieces split off the last dim).
bool leadsLikeX(const Value* tensor, const Value* x) {
  for (int step = 0; step < 8 && tensor != nullptr; ++step) {
    if (tensor == x) {
      return true;
    }
    const Node* node = tensor->node();
    if (node->matches(kLinear) || node->kind() == c10::aten::layer_norm ||
        node->kind() == c10::aten::contiguous) {
      tensor = node->input(0);
    } else if (isFullSlice(node)) {
      tensor = node->input(0);
    } else if (node->kind() == c10::aten::slice && node->inputs().size() == 5) {
      // A slice of the last dim keeps the others.
      const std::optional<int64_t> rank = knownRank(node->input(0));
      const std::optional<int64_t> dim = constantInt(node->input(1));
      if (!rank || !dim || normalizedDim(*dim, rank) != *rank - 1 || *rank < 3) {
        return false;
      }
      tensor = node->input(0);
    } else if (node->kind() == c10::prim::ListUnpack) {
      HeadSource ignored;
      tensor =
          rowsOfLinear(const_cast<Value*>(tensor), ignored) ? ignored.linear->output() : nullptr;
    } else {
      return false;
    }
  }
  return false;
}

// Whether an int value is x's size `dim` (0 or 1).
bool isSizeOfX(const Value* value, int64_t dim, const Value* x) {
  const std::optional<SizeOf> size = sizeOf(value);
  return size && size->dim == dim && leadsLikeX(size->tensor, x);
}

bool isBatchAndSeq(const std::array<Value*, 2>& sizes, const Value* x) {
  return isSizeOfX(sizes[0], 0, x) && isSizeOfX(sizes[1], 1, x);
}

std::optional<HeadSource> headSource(Value* heads) {
  if (std::optional<HeadSource> source = viewedHeads(heads)) {
    return source;
  }
  return packedHeads(heads);
}

// The nodes the match replaces (the merge excluded).
std::vector<Node*> patternNodes(const MhaMatch& match) {
  std::vector<Node*> nodes(match.merge_nodes.begin(), match.merge_nodes.end());
  nodes.push_back(match.attention);
  for (const HeadSource& source : match.sources) {
    nodes.insert(nodes.end(), source.nodes.begin(), source.nodes.end());
    nodes.push_back(source.linear);
  }
  return nodes;
}

// A read of size 0 or 1 of `value`, which is x's there: the rewrite reads it from x instead.
bool isLeadingSizeRead(const torch::jit::Use& use, const Value* value, const Value* x) {
  const Node* user = use.user;
  if (!user->matches(kSize)) {
    return false;
  }
  const std::optional<int64_t> dim = constantInt(user->input(1));
  return (dim == 0 || dim == 1) && leadsLikeX(value, x);
}

// `type_as(m, t)`: reads only t's dtype, which for the match's tensors is x's (the projections'
// float32 weights take x of their own dtype only). attention_fusion casts an in-place mask so.
bool isDtypeRead(const torch::jit::Use& use) {
  return use.offset == 1 && use.user->matches("aten::type_as(Tensor self, Tensor other) -> Tensor");
}

// Every node of the match is read only by nodes of the match (the merge's result by anything),
// except for sizes of x's first two dims and dtype reads, which the rewrite reads from x.
bool readOnlyInside(const MhaMatch& match) {
  const std::vector<Node*> nodes = patternNodes(match);
  auto inside = [&](const Node* node) {
    return std::find(nodes.begin(), nodes.end(), node) != nodes.end() || node == match.merge;
  };
  for (const Node* node : nodes) {
    if (node->owningBlock() != match.attention->owningBlock()) {
      return false;
    }
    for (const Value* output : node->outputs()) {
      for (const torch::jit::Use& use : output->uses()) {
        if (!inside(use.user) && !isLeadingSizeRead(use, output, match.x) && !isDtypeRead(use)) {
          return false;
        }
      }
    }
  }
  return true;
}

// The merge's last size: D or -1 (known numbers), or x's (when Din == D) or a whole projection's
// last size, asked as size(t, 2) or size(t, -1) (x is 3-D there: B and T are its first two).
bool isModelDim(const Value* value, const MhaMatch& match, int64_t d_in) {
  const std::optional<int64_t> known = knownInt(value);
  if (known) {
    return *known == match.d_model || *known == -1;
  }
  const std::optional<SizeOf> size = sizeOf(value);
  if (!size || (size->dim != 2 && size->dim != -1)) {
    return false;
  }
  if (size->tensor == match.x) {
    return d_in == match.d_model;
  }
  for (const HeadSource& source : match.sources) {
    if (size->tensor == source.linear->output() &&
        constantTensor(source.linear->input(1))->size(0) == match.d_model) {
      return true;
    }
  }
  return false;
}

// Whether `t` is [.., T, T] with ones on and below the diagonal and zeros above, T being x's seq:
// tril(ones(T, T)), or a constant buffer of that pattern (leading dims 1) sliced [..., :T, :T].
bool isLowerTriangularOnes(const Value* t, const Value* x) {
  const Node* node = t->node();
  if (node->kind() == c10::aten::tril && constantInt(node->input(1)) == 0) {
    const Node* ones = node->input(0)->node();
    const std::vector<Value*> sizes =
        ones->kind() == c10::aten::ones ? sizeEntries(ones->input(0)) : std::vector<Value*>{};
    return sizes.size() == 2 && isSizeOfX(sizes[0], 1, x) && isSizeOfX(sizes[1], 1, x);
  }
  // Two slices [:T] (start None or 0, step 1) over the last two dims of a constant.
  std::vector<int64_t> dims;
  for (int i = 0; i < 2; ++i) {
    if (node->kind() != c10::aten::slice || node->inputs().size() != 5 ||
        !isSizeOfX(node->input(3), 1, x) || constantInt(node->input(4)) != 1 ||
        !(node->input(2)->type()->kind() == c10::TypeKind::NoneType ||
          constantInt(node->input(2)) == 0) ||
        !constantInt(node->input(1))) {
      return false;
    }
    dims.push_back(*constantInt(node->input(1)));
    node = node->input(0)->node();
  }
  const std::optional<at::Tensor> buffer = constantTensor(node->output());
  if (!buffer || buffer->dim() < 2 || buffer->size(-1) != buffer->size(-2) ||
      buffer->numel() != buffer->size(-1) * buffer->size(-1)) {
    return false;
  }
  const int64_t rank = buffer->dim();
  for (int64_t& d : dims) {
    d = d < 0 ? d + rank : d;
  }
  std::sort(dims.begin(), dims.end());
  if (dims != std::vector<int64_t>{rank - 2, rank - 1}) {
    return false;
  }
  const int64_t n = buffer->size(-1);
  const at::Tensor square = buffer->reshape({n, n});
  return at::equal(square.eq(0), at::ones({n, n}, square.options().dtype(at::kBool)).triu(1));
}

// Whether the attention's filling mask masks exactly the keys after each query: `lower == 0` of
// the lower-triangular ones above, or triu(ones(T, T, dtype=bool), 1).
bool isCausalFill(const Node* attention, const Value* x) {
  const Value* mask = attention->input(3);
  const auto fills = torch::jit::toIValue(attention->input(5));
  if (!fills || !fills->isBool() || !fills->toBool()) {
    return false;
  }
  const Node* node = mask->node();
  if (node->matches("aten::eq.Scalar(Tensor self, Scalar other) -> Tensor")) {
    const auto zero = torch::jit::toIValue(node->input(1));
    return zero && (zero->isInt() || zero->isDouble()) && zero->toScalar().toDouble() == 0.0 &&
           isLowerTriangularOnes(node->input(0), x);
  }
  if (node->kind() == c10::aten::triu && constantInt(node->input(1)) == 1) {
    const Node* ones = node->input(0)->node();
    const std::vector<Value*> sizes =
        ones->kind() == c10::aten::ones ? sizeEntries(ones->input(0)) : std::vector<Value*>{};
    return sizes.size() == 2 && isSizeOfX(sizes[0], 1, x) && isSizeOfX(sizes[1], 1, x) &&
           constantInt(ones->input(1)) == static_cast<int64_t>(at::kBool);
  }
  return false;
}

std::optional<MhaMatch> matchMultiHeadAttention(Node* attention, torch::jit::AliasDb& alias_db) {
  MhaMatch match;
  match.attention = attention;
  Value* context = attention->output();
  if (context->uses().size() != 1) {
    return std::nullopt;
  }
  // Merge: permute(0, 2, 1, 3) then reshape, or contiguous then view.
  Node* merge_permute = context->uses()[0].user;
  if (swappedHeadsAndSeq(merge_permute) != context || merge_permute->output()->uses().size() != 1) {
    return std::nullopt;
  }
  match.merge_nodes.push_back(merge_permute);
  Node* next = merge_permute->output()->uses()[0].user;
  if (next->matches(kContiguous) && next->output()->uses().size() == 1) {
    match.merge_nodes.push_back(next);
    next = next->output()->uses()[0].user;
    if (!isViewOrReshape(next)) {
      return std::nullopt;
    }
  } else if (!next->matches(kReshape)) {
    // A view of the permuted (non-contiguous) heads raises in eager code; leave it alone.
    return std::nullopt;
  }
  match.merge = next;
  if (next->input(0) != match.merge_nodes.back()->output()) {
    return std::nullopt;
  }

  for (int i = 0; i < 3; ++i) {
    std::optional<HeadSource> source = headSource(attention->input(i));
    if (!source) {
      return std::nullopt;
    }
    match.sources[i] = std::move(*source);
  }
  match.x = match.sources[0].linear->input(0);
  const HeadSource& q = match.sources[0];
  match.heads = q.heads;
  match.d_model = q.heads * q.head_dim;
  const at::Tensor weight = *constantTensor(q.linear->input(1));
  const int64_t d_in = weight.size(1);
  // D >= 2: with D == 1, view(size(p, 0), size(p, 1), 1, 1) would also accept a 2-D x.
  if (match.d_model < 2) {
    return std::nullopt;
  }
  for (const HeadSource& source : match.sources) {
    const at::Tensor w = *constantTensor(source.linear->input(1));
    if (source.linear->input(0) != match.x || w.size(1) != d_in ||
        w.scalar_type() != weight.scalar_type() || source.heads != q.heads ||
        source.head_dim != q.head_dim || source.row_begin + match.d_model > w.size(0) ||
        !isBatchAndSeq(source.batch_seq, match.x)) {
      return std::nullopt;
    }
  }

  const std::vector<Value*> merged = sizeEntries(match.merge->input(1));
  if (merged.size() != 3 || !isBatchAndSeq({merged[0], merged[1]}, match.x)) {
    return std::nullopt;
  }
  if (!isModelDim(merged[2], match, d_in)) {
    return std::nullopt;
  }
  if (!readOnlyInside(match)) {
    return std::nullopt;
  }
  match.causal = isCausalFill(attention, match.x);
  // The fused node computes the projections where the merge was: nothing may write their inputs.
  for (const HeadSource& source : match.sources) {
    for (const Value* input : source.linear->inputs()) {
      if (alias_db.hasWriters(input)) {
        return std::nullopt;
      }
    }
  }
  return match;
}

void rewrite(const MhaMatch& match, torch::jit::Graph& graph) {
  std::vector<at::Tensor> weights;
  std::vector<at::Tensor> biases;
  bool any_bias = false;
  for (const HeadSource& source : match.sources) {
    const at::Tensor weight = *constantTensor(source.linear->input(1));
    weights.push_back(weight.narrow(0, source.row_begin, match.d_model));
    const std::optional<at::Tensor> bias = constantTensor(source.linear->input(2));
    any_bias = any_bias || bias.has_value();
    biases.push_back(bias ? bias->narrow(0, source.row_begin, match.d_model)
                          : at::zeros({match.d_model}, weight.options()));
  }

  torch::jit::WithInsertPoint guard(match.merge);
  Value* weight = graph.insertConstant(at::cat(weights, 0).contiguous());
  Value* bias = any_bias ? graph.insertConstant(at::cat(biases, 0).contiguous())
                         : graph.insertConstant(c10::IValue());
  Value* heads = graph.insertConstant(match.heads);
  Value* mask = match.causal ? graph.insertConstant(c10::IValue()) : match.attention->input(3);
  Value* fills = match.causal ? graph.insertConstant(false) : match.attention->input(5);
  Node* fused = graph.create(c10::Symbol::fromQualString("srt::multi_head_attention"),
                             {match.x, weight, bias, heads, mask, match.attention->input(4), fills,
                              graph.insertConstant(match.causal)},
                             1);
  graph.insertNode(fused);
  fused->output()->setType(match.merge->output()->type());
  fused->copyMetadata(match.merge);
  match.merge->output()->replaceAllUsesWith(fused->output());
  // size(t, 0 or 1) of the match's tensors is size(x, 0 or 1), their dtype x's: the only reads
  // outside the match it allowed.
  for (Node* node : patternNodes(match)) {
    for (Value* output : node->outputs()) {
      const std::vector<torch::jit::Use> uses = output->uses();
      for (const torch::jit::Use& use : uses) {
        if (isLeadingSizeRead(use, output, match.x) || isDtypeRead(use)) {
          use.user->replaceInput(use.offset, match.x);
        }
      }
    }
  }
  // The pattern's nodes are now read by nothing: dead-code elimination removes them.
}

bool isAttention(Node* node) {
  static const c10::Symbol attention = c10::Symbol::fromQualString("srt::attention");
  return node->kind() == attention;
}

} // namespace

bool fuseMultiHeadAttention(GraphPtr& graph) {
  bool changed = false;
  // Matches never share nodes (each owns its attention node and single-use chains), but a
  // rewrite invalidates the alias analysis, so it is rebuilt for the next search.
  for (bool found = true; found;) {
    found = false;
    torch::jit::AliasDb alias_db(graph);
    for (Node* candidate : nodesWhere(graph->block(), isAttention)) {
      if (std::optional<MhaMatch> match = matchMultiHeadAttention(candidate, alias_db)) {
        rewrite(*match, *graph);
        torch::jit::EliminateDeadCode(graph);
        found = changed = true;
        break;
      }
    }
  }
  return changed;
}

} // namespace srt::passes
