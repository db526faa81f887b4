/* SANITIZED: 1 in a build with AddressSanitizer (gcc or clang), whose
 * shadow memory and slower code some tests must make room for. */
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif
