// ordo: the safetensors file format, read and written.
//
// Layout (https://github.com/huggingface/safetensors, "Format"):
//   8 bytes   N, little-endian u64: the header length
//   N bytes   a UTF-8 JSON object {name: {"dtype", "shape", "data_offsets": [begin, end)}, ...,
//             optional "__metadata__": {string: string}}, possibly padded with trailing spaces
//   rest      the data buffer; offsets are relative to its start; tensors are contiguous,
//             do not overlap and cover the buffer exactly.
//
// The reader reads the file and checks every one of those rules before anything is used, so
// that a stranger's file can never make ordo read out of bounds or allocate from a lie.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace ordo {

// A whole file, read into memory. (Not mapped: a mapped file that another program truncates
// while ordo runs would end the process with SIGBUS at the next read of a lost page, and one
// rewritten in place would change the weights under a running pass, after they were checked.
// Every weight is read at load anyway, to check that it is finite.) The buffer is asked for in
// 2 MiB pages where the system gives them (madvise MADV_HUGEPAGE): the 90 MB of all-MiniLM-L6-v2
// in 4 KiB pages cost ~22,000 page faults, a third of the CPU time of `ordo encode` on one text.
class FileImage {
 public:
  FileImage() = default;
  explicit FileImage(const std::string& path);  // throws InputError naming the path

  const unsigned char* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Unmap {
    size_t bytes;
    void operator()(unsigned char* p) const;
  };
  std::unique_ptr<unsigned char, Unmap> data_;
  size_t size_ = 0;
};

struct TensorInfo {
  std::string name;
  std::string dtype;  // as written in the header: "F32", "F16", "BF16", "I64", ...
  std::vector<uint64_t> shape;
  uint64_t elements = 0;                // product of shape (1 for a scalar)
  uint64_t begin = 0, end = 0;          // byte range within the data buffer
  const unsigned char* data = nullptr;  // points into the file's image
};

// Bytes per element of a safetensors dtype name, or 0 if the name is not a safetensors dtype.
size_t dtype_size(const std::string& dtype);

// Parses and checks a whole safetensors image held in memory. `where` names it in errors.
// The returned TensorInfo::data pointers point into `bytes`.
std::vector<TensorInfo> parse_safetensors(const unsigned char* bytes, size_t size, const std::string& where,
                                          std::map<std::string, std::string>* metadata = nullptr);

class SafeTensors {
 public:
  SafeTensors() = default;
  explicit SafeTensors(const std::string& path);  // maps, then parse_safetensors

  const TensorInfo* find(const std::string& name) const;  // nullptr if absent; by hash, not a scan
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  FileImage file_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

// One tensor to write: raw little-endian bytes of `dtype`, `shape` elements.
struct TensorBytes {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  std::vector<unsigned char> bytes;
};

TensorBytes f32_tensor(const std::string& name, std::vector<uint64_t> shape, const std::vector<float>& values);

// Writes tensors in the given order; the data buffer starts on an 8-byte boundary so that a
// reader can map F32 tensors in place. The file appears whole or not at all (written beside
// the destination, then renamed).
void write_safetensors(const std::string& path, const std::vector<TensorBytes>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A floating-point tensor's values as float32: F32 copied, F16 and BF16 widened (exactly). Another dtype
// throws InputError(where, "tensor NAME has dtype D; ordo loads F32, F16 and BF16").
std::vector<float> widen_to_f32(const TensorInfo& t, const std::string& where);

// IEEE half and bfloat16 conversions (round to nearest even when narrowing).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);

}  // namespace ordo
