#include "auth/crypto.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "common/hex.h"

namespace sightline {

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  std::string hex;
  AppendHex(&hex, std::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
  return hex;
}

Result<std::string> RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
    return Status::Internal("the system has no randomness to give");
  }
  std::string hex;
  AppendHex(&hex, raw);
  return hex;
}

std::string Pbkdf2Sha256Hex(std::string_view password, std::string_view salt, int64_t iterations) {
  if (iterations < 1 || iterations > (int64_t{1} << 30)) return "";
  unsigned char out[32];
  if (PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                        reinterpret_cast<const unsigned char*>(salt.data()), static_cast<int>(salt.size()),
                        static_cast<int>(iterations), EVP_sha256(), sizeof(out), out) != 1) {
    return "";
  }
  std::string hex;
  AppendHex(&hex, std::string_view(reinterpret_cast<const char*>(out), sizeof(out)));
  return hex;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() != b.size();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace sightline
