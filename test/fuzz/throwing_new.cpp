// Linked into each harness executable directly (test/fuzz/CMakeLists.txt): from a static
// library the linker would keep ASan's operator new, which the runtime defines first.
#include <cstdlib>
#include <new>

// ASan's operator new cannot throw: when an allocation fails it reports out-of-memory and aborts,
// where the real program gets std::bad_alloc, which LibTorch and static_runtime turn into an
// error (a mutated pickle that declares a 4 GB string made LibTorch's unpickler reserve one).
// The harnesses' own operator new and delete, on malloc and free, throw as the real ones do.
// ASan still checks every access and leak of that memory; its new/delete pairing check is lost.
// (The aligned forms stay ASan's, paired with its aligned delete.)
namespace {
void* allocateOrThrow(std::size_t size) {
  // allocator_may_return_null: malloc returns null past max_allocation_size_mb
  if (void* memory = std::malloc(size == 0 ? 1 : size)) {
    return memory;
  }
  throw std::bad_alloc();
}
} // namespace

void* operator new(std::size_t size) {
  return allocateOrThrow(size);
}
void* operator new[](std::size_t size) {
  return allocateOrThrow(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* memory) noexcept {
  std::free(memory);
}
void operator delete[](void* memory) noexcept {
  std::free(memory);
}
void operator delete(void* memory, std::size_t) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::size_t) noexcept {
  std::free(memory);
}
void operator delete(void* memory, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, const std::nothrow_t&) noexcept {
  std::free(memory);
}
