#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <nlohmann/json.hpp>

#include <ordo/engine/safetensors.h>
#include <ordo/errors.h>

#include "common/atomic_file.h"
#include "common/memory.h"
#include "common/regular_file.h"
#include "engine/strict_json.h"

namespace ordo {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// FileImage

FileImage::FileImage(const std::string& path) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, &size);
  try {
    if (size > machine_memory_bytes())
      throw InputError(path, "is " + std::to_string(size) + " bytes, more than this machine's memory");
    size_ = size_t(size);
    const size_t bytes = std::max<size_t>(size_, 1);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: where the system has no huge pages, 4 KiB ones
#endif
    data_ = std::unique_ptr<unsigned char, Unmap>(static_cast<unsigned char*>(p), Unmap{bytes});
    size_t done = 0;
    while (done < size_) {
      const ssize_t n = ::read(fd, data_.get() + done, std::min<size_t>(size_ - done, size_t(1) << 30));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw InputError(path, std::string("cannot read: ") + std::strerror(errno));
      if (n == 0) throw InputError(path, "became shorter while it was read (changed by another program?)");
      done += size_t(n);
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

void FileImage::Unmap::operator()(unsigned char* p) const {
  ::munmap(p, bytes);
}

// ---------------------------------------------------------------------------------------------
// Reading

size_t dtype_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},  {"I32", 4},     {"I16", 2},    {"I8", 1},
      {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1},   {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

namespace {

std::string shape_string(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

uint64_t read_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::vector<TensorInfo> parse_safetensors(const unsigned char* bytes, size_t size, const std::string& where,
                                          std::map<std::string, std::string>* metadata) {
  // A clone without `git lfs` holds small text files in place of the weights.
  static const char lfs[] = "version https://git-lfs";
  if (size >= sizeof(lfs) - 1 && std::memcmp(bytes, lfs, sizeof(lfs) - 1) == 0)
    throw InputError(where, "is a Git LFS pointer file, not the weights (fetch them with `git lfs pull`)");
  if (size < 8)
    throw InputError(where, "file is " + std::to_string(size) + " bytes, too short for a safetensors header");

  // Every size below is checked against the file before it is used; nothing is allocated from it.
  const uint64_t header_len = read_u64_le(bytes);
  const uint64_t max_header = 100000000;  // the format's own limit
  if (header_len > max_header)
    throw InputError(where, "header length " + std::to_string(header_len) +
                                " (bytes 0-7) exceeds the safetensors limit of " + std::to_string(max_header) +
                                " bytes");
  if (header_len > size - 8)
    throw InputError(where, "header length " + std::to_string(header_len) +
                                " (bytes 0-7) runs past the end of the file (" + std::to_string(size) + " bytes)");
  if (header_len < 2)
    throw InputError(where,
                     "header length " + std::to_string(header_len) + " (bytes 0-7) is too short for a JSON object");

  const char* text = reinterpret_cast<const char*>(bytes + 8);
  const StrictJson header = parse_strict_json(text, text + header_len, where, "header");
  if (!header.is_object()) throw InputError(where, "header is " + brief(header) + ", not an object");

  const unsigned char* data = bytes + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;

  std::vector<TensorInfo> tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (entry.is_null()) continue;  // the format's reference parser reads an optional map: null is none
      if (!entry.is_object()) throw InputError(where, "__metadata__ is " + brief(entry) + ", not an object of strings");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string())
          throw InputError(where, "__metadata__ value for " + quote_name(k) + " is " + brief(v) + ", not a string");
        if (metadata) (*metadata)[k] = v.get<std::string>();
      }
      continue;
    }
    const std::string at = "tensor " + quote_name(name);
    if (!entry.is_object()) throw InputError(where, at + " is " + brief(entry) + ", not an object");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(key)) throw InputError(where, at + ": missing \"" + key + "\"");

    TensorInfo t;
    t.name = name;
    const json& dtype = entry.at("dtype");
    if (!dtype.is_string()) throw InputError(where, at + ": dtype is " + brief(dtype) + ", not a string");
    t.dtype = dtype.get<std::string>();
    const size_t esize = dtype_size(t.dtype);
    if (esize == 0) throw InputError(where, at + ": unknown dtype " + quote_name(t.dtype));

    // elements = Π shape, bytes = elements · dtype size, each step checked for overflow
    const json& shape = entry.at("shape");
    if (!shape.is_array()) throw InputError(where, at + ": shape is " + brief(shape) + ", not an array");
    t.elements = 1;
    for (const json& dim : shape) {
      if (!dim.is_number_unsigned())
        throw InputError(where, at + ": shape holds " + brief(dim) + ", not a non-negative integer");
      t.shape.push_back(dim.get<uint64_t>());
      t.elements = checked_mul(t.elements, t.shape.back(), where, at + ": element count of the shape");
    }
    const uint64_t nbytes = checked_mul(t.elements, esize, where, at + ": byte count of the shape");

    const json& offsets = entry.at("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      throw InputError(where, at + ": data_offsets is " + brief(offsets) + ", not two byte offsets [begin, end]");
    t.begin = offsets[0].get<uint64_t>();
    t.end = offsets[1].get<uint64_t>();
    if (t.begin > t.end)
      throw InputError(where, at + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                                  "] end before they begin");
    if (t.end > data_size)
      throw InputError(where, at + ": data_offsets end at byte " + std::to_string(t.end) +
                                  " past the end of the data buffer (" + std::to_string(data_size) + " bytes)");
    if (t.end - t.begin != nbytes)
      throw InputError(where, at + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                                  "] hold " + std::to_string(t.end - t.begin) + " bytes but " + t.dtype + " " +
                                  shape_string(t.shape) + " needs " + std::to_string(nbytes));
    t.data = data + t.begin;
    tensors.push_back(std::move(t));
  }

  // Contiguous, non-overlapping, covering the buffer exactly.
  std::vector<const TensorInfo*> order;
  for (const auto& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t expected = 0;
  for (const TensorInfo* t : order) {
    if (t->begin != expected)
      throw InputError(where, "tensor " + quote_name(t->name) + " starts at data offset " + std::to_string(t->begin) +
                                  " but the previous tensor ends at " + std::to_string(expected) +
                                  (t->begin < expected ? " (overlap)" : " (gap)"));
    expected = t->end;
  }
  if (expected != data_size)
    throw InputError(where, "tensors cover " + std::to_string(expected) + " bytes of a " + std::to_string(data_size) +
                                "-byte data buffer (data offset " + std::to_string(expected) + " onwards is unused)");
  return tensors;
}

SafeTensors::SafeTensors(const std::string& path) : path_(path), file_(path) {
  tensors_ = parse_safetensors(file_.data(), file_.size(), path, &metadata_);
  index_.reserve(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
}

const TensorInfo* SafeTensors::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

// ---------------------------------------------------------------------------------------------
// Writing

TensorBytes f32_tensor(const std::string& name, std::vector<uint64_t> shape, const std::vector<float>& values) {
  TensorBytes t{name, "F32", std::move(shape), {}};
  t.bytes.resize(values.size() * sizeof(float));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());  // x86-64 and aarch64 are little-endian
  return t;
}

void write_safetensors(const std::string& path, const std::vector<TensorBytes>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');

  write_atomically(path, [&](std::FILE* f) {
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(uint64_t(text.size()) >> (8 * i));
    std::fwrite(len, 1, 8, f);
    std::fwrite(text.data(), 1, text.size(), f);
    for (const auto& t : tensors) std::fwrite(t.bytes.data(), 1, t.bytes.size(), f);
  });
}

// ---------------------------------------------------------------------------------------------
// Half precision

namespace {
uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant · 2^-24
    const float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf, nan
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));         // rebias 15 → 127
}

uint16_t float_to_half(float f) {
  uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0u);  // inf, nan
  if (x >= 0x477ff000u) return sign | 0x7c00u;         // ≥ 65520 rounds past the largest half
  if (x < 0x38800000u) {                               // below 2^-14: a half subnormal (or zero)
    const float scaled = bits_float(x) * 16777216.0f;  // · 2^24, exact
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  x += 0xfffu + ((x >> 13) & 1u);  // round to nearest, ties to even
  return sign | static_cast<uint16_t>((x - 0x38000000u) >> 13);
}

float bf16_to_float(uint16_t h) {
  return bits_float(uint32_t(h) << 16);
}

std::vector<float> widen_to_f32(const TensorInfo& t, const std::string& where) {
  if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16")
    throw InputError(where, "tensor " + t.name + " has dtype " + t.dtype + "; ordo loads F32, F16 and BF16");
  std::vector<float> v(t.elements);
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype == "F32") {
      std::memcpy(&v[i], t.data + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, t.data + 2 * i, 2);
      v[i] = t.dtype == "F16" ? half_to_float(h) : bf16_to_float(h);
    }
  }
  return v;
}

uint16_t float_to_bf16(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace ordo
