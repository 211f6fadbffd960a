// Little-endian fixed-width and varint encoding, as LevelDB's util/coding. Decoders take a
// string_view and advance it; they return false (never read past the end) on short input.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace basalt {

inline void EncodeFixed16(char* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void EncodeFixed32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void EncodeFixed64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
inline uint16_t DecodeFixed16(const char* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
inline uint32_t DecodeFixed32(const char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
inline uint64_t DecodeFixed64(const char* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }

inline void PutFixed16(std::string* dst, uint16_t v) { char b[2]; EncodeFixed16(b, v); dst->append(b, 2); }
inline void PutFixed32(std::string* dst, uint32_t v) { char b[4]; EncodeFixed32(b, v); dst->append(b, 4); }
inline void PutFixed64(std::string* dst, uint64_t v) { char b[8]; EncodeFixed64(b, v); dst->append(b, 8); }

// Big-endian 64-bit: the byte order of timestamps in cell keys and of HBase's counters
// (Bytes.toBytes(long)).
inline void EncodeFixed64BE(char* p, uint64_t v) { EncodeFixed64(p, __builtin_bswap64(v)); }
inline uint64_t DecodeFixed64BE(const char* p) { return __builtin_bswap64(DecodeFixed64(p)); }
inline std::string Fixed64BE(uint64_t v) { std::string s(8, '\0'); EncodeFixed64BE(s.data(), v); return s; }

// Writes a varint into p (at most 10 bytes); returns the byte after it.
inline char* EncodeVarint64(char* p, uint64_t v) {
  auto* u = reinterpret_cast<unsigned char*>(p);
  while (v >= 0x80) { *u++ = static_cast<unsigned char>(v | 0x80); v >>= 7; }
  *u++ = static_cast<unsigned char>(v);
  return reinterpret_cast<char*>(u);
}
inline void PutVarint64(std::string* dst, uint64_t v) {
  char b[10]; dst->append(b, EncodeVarint64(b, v) - b);
}
inline void PutVarint32(std::string* dst, uint32_t v) { PutVarint64(dst, v); }
inline int VarintLength(uint64_t v) { int n = 1; while (v >= 0x80) { v >>= 7; ++n; } return n; }

// Parses a varint from [p, limit); returns the byte after it, or nullptr if malformed/short.
inline const char* DecodeVarint64(const char* p, const char* limit, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && p < limit; shift += 7) {
    uint64_t byte = static_cast<unsigned char>(*p++);
    if (shift == 63 && byte > 1) return nullptr;
    result |= (byte & 0x7f) << shift;
    if (!(byte & 0x80)) { *v = result; return p; }
  }
  return nullptr;
}
inline const char* DecodeVarint32(const char* p, const char* limit, uint32_t* v) {
  if (p < limit && !(static_cast<unsigned char>(*p) & 0x80)) { *v = static_cast<unsigned char>(*p); return p + 1; }
  uint64_t w;
  const char* q = DecodeVarint64(p, limit, &w);
  if (q == nullptr || w > UINT32_MAX) return nullptr;
  *v = static_cast<uint32_t>(w);
  return q;
}

inline bool GetVarint64(std::string_view* in, uint64_t* v) {
  const char* q = DecodeVarint64(in->data(), in->data() + in->size(), v);
  if (q == nullptr) return false;
  in->remove_prefix(q - in->data());
  return true;
}
inline bool GetVarint32(std::string_view* in, uint32_t* v) {
  const char* q = DecodeVarint32(in->data(), in->data() + in->size(), v);
  if (q == nullptr) return false;
  in->remove_prefix(q - in->data());
  return true;
}
inline bool GetFixed32(std::string_view* in, uint32_t* v) {
  if (in->size() < 4) return false;
  *v = DecodeFixed32(in->data()); in->remove_prefix(4); return true;
}
inline bool GetFixed64(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  *v = DecodeFixed64(in->data()); in->remove_prefix(8); return true;
}
// A varint length followed by that many bytes.
inline void PutLengthPrefixed(std::string* dst, std::string_view s) {
  PutVarint32(dst, static_cast<uint32_t>(s.size())); dst->append(s);
}
inline bool GetLengthPrefixed(std::string_view* in, std::string_view* out) {
  uint32_t n;
  if (!GetVarint32(in, &n) || in->size() < n) return false;
  *out = in->substr(0, n); in->remove_prefix(n); return true;
}

inline uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)); }

}  // namespace basalt
