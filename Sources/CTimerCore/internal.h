/*
 * The mark of the core's internal names.
 *
 * Every non-static internal (tk__) declaration carries TK__INTERNAL, which
 * gives it hidden visibility: a shared build of the core exports only the
 * public tk_ names. It is set here, at the declarations, rather than with
 * -fvisibility=hidden, because C programs and SwiftPM compile these files
 * with flags of their own.
 */
#ifndef TK_INTERNAL_H
#define TK_INTERNAL_H

#define TK__INTERNAL __attribute__((visibility("hidden")))

#endif /* TK_INTERNAL_H */
