#include "storage/zstd_frame.h"

#include <zstd.h>

#include <memory>

#include "storage/zstd_dictionary.h"

namespace gpulse::storage {

bool ZstdCompressIfSmaller(std::string* body, int level, size_t max_ratio) {
  thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(),
                                                                       ZSTD_freeCCtx);
  std::string packed(ZSTD_compressBound(body->size()), '\0');
  const size_t n = ZSTD_compressCCtx(cctx.get(), packed.data(), packed.size(), body->data(),
                                     body->size(), level);
  // Kept when smaller and body <= max_ratio * n (written without overflow).
  if (ZSTD_isError(n) || n == 0 || n >= body->size() || (body->size() - 1) / n >= max_ratio) {
    return false;
  }
  packed.resize(n);
  *body = std::move(packed);
  return true;
}

namespace {

// Every zstd frame starts with these bytes (RFC 8878, 3.1.1): blocks keep
// their frames without them.
constexpr char kZstdMagic[] = {'\x28', '\xb5', '\x2f', '\xfd'};
constexpr size_t kZstdMagicBytes = sizeof(kZstdMagic);

Status Decompress(std::string_view frame, size_t max_bytes, const ZstdDictionary* dict,
                  std::string* body) {
  const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
    return Status::Corruption("bad zstd frame header");
  }
  if (size > max_bytes) return Status::Corruption("zstd size out of bounds");
  if (ZSTD_findFrameCompressedSize(frame.data(), frame.size()) != frame.size()) {
    return Status::Corruption("zstd frame does not fill its space");
  }
  thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(),
                                                                       ZSTD_freeDCtx);
  body->resize(size);
  const size_t n =
      dict == nullptr
          ? ZSTD_decompressDCtx(dctx.get(), body->data(), body->size(), frame.data(), frame.size())
          : ZSTD_decompress_usingDDict(dctx.get(), body->data(), body->size(), frame.data(),
                                       frame.size(), dict->decompress_dict());
  if (ZSTD_isError(n) || n != size) return Status::Corruption("zstd frame does not decode");
  return Status::Ok();
}

// One zstd frame of `body` with `dict`: its content size in the header, no
// checksum and no dictionary id (the block's key names its dictionary).
bool CompressWith(const ZstdDictionary& dict, std::string_view body, std::string* frame) {
  thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(),
                                                                       ZSTD_freeCCtx);
  ZSTD_CCtx_reset(cctx.get(), ZSTD_reset_session_and_parameters);
  if (ZSTD_isError(ZSTD_CCtx_refCDict(cctx.get(), dict.compress_dict())) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_dictIDFlag, 0))) {
    return false;
  }
  frame->resize(ZSTD_compressBound(body.size()));
  const size_t n =
      ZSTD_compress2(cctx.get(), frame->data(), frame->size(), body.data(), body.size());
  if (ZSTD_isError(n)) return false;
  frame->resize(n);
  return true;
}

}  // namespace

void AppendBlock(uint8_t format, std::string body, int level, const ZstdDictionary* dict,
                 std::string* out) {
  out->push_back(static_cast<char>(format));
  if (dict != nullptr) {
    thread_local std::string frame;
    if (CompressWith(*dict, body, &frame) && frame.size() > kZstdMagicBytes &&
        frame.size() - kZstdMagicBytes < body.size() &&
        frame.compare(0, kZstdMagicBytes, kZstdMagic, kZstdMagicBytes) == 0) {
      out->push_back('\3');
      out->append(std::string_view(frame).substr(kZstdMagicBytes));
    } else {
      out->push_back('\0');
      out->append(body);
    }
  } else if (!ZstdCompressIfSmaller(&body, level, SIZE_MAX)) {
    out->push_back('\0');
    out->append(body);
  } else if (body.compare(0, kZstdMagicBytes, kZstdMagic, kZstdMagicBytes) == 0) {
    out->push_back('\2');
    out->append(std::string_view(body).substr(kZstdMagicBytes));
  } else {
    out->push_back('\1');  // a frame of another kind (zstd's format never writes one): whole
    out->append(body);
  }
}

Status ReframeBlock(std::string_view block, const ZstdDictionary* was, const ZstdDictionary* dict,
                    std::string* out) {
  if (block.empty()) return Status::Corruption("truncated header");
  const auto format = static_cast<uint8_t>(block[0]);
  thread_local std::string scratch;
  std::string_view body;
  GPULSE_RETURN_IF_ERROR(OpenBlock(block, format, kMaxBlockBodyBytes, was, &scratch, &body));
  AppendBlock(format, std::string(body), /*level=*/0, dict, out);
  return Status::Ok();
}

Status OpenBlock(std::string_view data, uint8_t format, size_t max_bytes,
                 const ZstdDictionary* dict, std::string* scratch, std::string_view* body) {
  if (data.size() < 2) return Status::Corruption("truncated header");
  if (static_cast<uint8_t>(data[0]) != format) {
    return Status::Corruption("unknown format " + std::to_string(static_cast<uint8_t>(data[0])));
  }
  const auto compression = static_cast<uint8_t>(data[1]);
  data.remove_prefix(2);
  if (compression == 1) {
    GPULSE_RETURN_IF_ERROR(ZstdDecompress(data, max_bytes, scratch));
    *body = *scratch;
  } else if (compression == 2 || compression == 3) {
    if (compression == 3 && dict == nullptr) {
      return Status::Corruption("compressed with a dictionary the store lacks");
    }
    thread_local std::string frame;
    frame.assign(kZstdMagic, kZstdMagicBytes);
    frame.append(data);
    GPULSE_RETURN_IF_ERROR(
        Decompress(frame, max_bytes, compression == 3 ? dict : nullptr, scratch));
    *body = *scratch;
  } else if (compression == 0) {
    *body = data;
  } else {
    return Status::Corruption("unknown compression " + std::to_string(compression));
  }
  return Status::Ok();
}

Status ZstdDecompress(std::string_view frame, size_t max_bytes, std::string* body) {
  return Decompress(frame, max_bytes, nullptr, body);
}

}  // namespace gpulse::storage
