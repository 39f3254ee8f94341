/* libcurl for Swift. curl_easy_setopt and curl_easy_getinfo are variadic: one typed wrapper
 * per argument type, so that Swift never passes the wrong C type. */
#ifndef FINGERAUTH_CCURL_SHIM_H
#define FINGERAUTH_CCURL_SHIM_H
#include <curl/curl.h>

static inline CURLcode fa_curl_setopt_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode fa_curl_setopt_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode fa_curl_setopt_pointer(CURL *curl, CURLoption option, void *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode fa_curl_setopt_slist(CURL *curl, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(curl, option, value);
}
typedef size_t (*fa_curl_write_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode fa_curl_setopt_write_function(CURL *curl, fa_curl_write_callback callback) {
    return curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, callback);
}
static inline CURLcode fa_curl_setopt_header_function(CURL *curl, fa_curl_write_callback callback) {
    return curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, callback);
}
static inline CURLcode fa_curl_getinfo_long(CURL *curl, CURLINFO info, long *value) {
    return curl_easy_getinfo(curl, info, value);
}
#endif
