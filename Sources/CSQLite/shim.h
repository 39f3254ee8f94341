/* SQLite for Swift. SQLITE_TRANSIENT is a cast macro that Swift cannot import. */
#ifndef FINGERAUTH_CSQLITE_SHIM_H
#define FINGERAUTH_CSQLITE_SHIM_H
#include <sqlite3.h>

static inline int fa_sqlite3_bind_text(sqlite3_stmt *stmt, int index, const char *text, int length) {
    return sqlite3_bind_text(stmt, index, text, length, SQLITE_TRANSIENT);
}
static inline int fa_sqlite3_bind_blob(sqlite3_stmt *stmt, int index, const void *data, int length) {
    return sqlite3_bind_blob(stmt, index, data, length, SQLITE_TRANSIENT);
}
#endif
