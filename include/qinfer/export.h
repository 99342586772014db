/* Symbol visibility of the public API (the library is built with -fvisibility=hidden). */
#ifndef QINFER_EXPORT_H
#define QINFER_EXPORT_H
#if defined(__GNUC__) || defined(__clang__)
#define QINFER_API __attribute__((visibility("default")))
#else
#define QINFER_API
#endif
#endif
