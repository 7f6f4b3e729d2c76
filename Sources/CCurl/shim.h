#include <curl/curl.h>

// Typed wrappers for libcurl's variadic entry points, which Swift cannot call.
//
// Each wrapper fixes the type of the one variadic argument, so Swift passes exactly what
// libcurl reads for that option (a long, a curl_off_t, a pointer or a callback). The
// function names are parenthesised so the header's type-checking macros (typecheck-gcc.h,
// enabled for clang in curl 8.x) do not expand here. Only API present in libcurl 7.88
// (Debian bookworm) is used.
#ifndef OSH_CCURL_SHIM_H
#define OSH_CCURL_SHIM_H

// MARK: global

static inline CURLcode osh_curl_global_init_default(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}

// MARK: curl_easy_setopt

static inline CURLcode osh_curl_easy_setopt_long(CURL *h, CURLoption o, long v) {
    return (curl_easy_setopt)(h, o, v);
}
static inline CURLcode osh_curl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) {
    return (curl_easy_setopt)(h, o, v);
}
// Strings are copied by libcurl, except CURLOPT_POSTFIELDS (the caller keeps the memory alive).
static inline CURLcode osh_curl_easy_setopt_str(CURL *h, CURLoption o, const char *v) {
    return (curl_easy_setopt)(h, o, v);
}
static inline CURLcode osh_curl_easy_setopt_ptr(CURL *h, CURLoption o, void *v) {
    return (curl_easy_setopt)(h, o, v);
}
static inline CURLcode osh_curl_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) {
    return (curl_easy_setopt)(h, o, v);
}
// CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION share this signature.
static inline CURLcode osh_curl_easy_setopt_write_cb(CURL *h, CURLoption o, curl_write_callback cb) {
    return (curl_easy_setopt)(h, o, cb);
}
static inline CURLcode osh_curl_easy_setopt_debug_cb(CURL *h, curl_debug_callback cb) {
    return (curl_easy_setopt)(h, CURLOPT_DEBUGFUNCTION, cb);
}

// MARK: curl_multi_setopt

static inline CURLMcode osh_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) {
    return (curl_multi_setopt)(m, o, v);
}
static inline CURLMcode osh_curl_multi_setopt_ptr(CURLM *m, CURLMoption o, void *v) {
    return (curl_multi_setopt)(m, o, v);
}
static inline CURLMcode osh_curl_multi_setopt_socket_cb(CURLM *m, curl_socket_callback cb) {
    return (curl_multi_setopt)(m, CURLMOPT_SOCKETFUNCTION, cb);
}
static inline CURLMcode osh_curl_multi_setopt_timer_cb(CURLM *m, curl_multi_timer_callback cb) {
    return (curl_multi_setopt)(m, CURLMOPT_TIMERFUNCTION, cb);
}

// MARK: curl_easy_getinfo

static inline CURLcode osh_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *out) {
    return (curl_easy_getinfo)(h, i, out);
}
static inline CURLcode osh_curl_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *out) {
    return (curl_easy_getinfo)(h, i, out);
}
static inline CURLcode osh_curl_easy_getinfo_double(CURL *h, CURLINFO i, double *out) {
    return (curl_easy_getinfo)(h, i, out);
}
// CURLINFO_PRIVATE, CURLINFO_EFFECTIVE_URL, …: a pointer owned by libcurl (or by the caller for PRIVATE).
static inline CURLcode osh_curl_easy_getinfo_ptr(CURL *h, CURLINFO i, char **out) {
    return (curl_easy_getinfo)(h, i, out);
}

// MARK: multi socket

// curl_multi_socket_action for the timeout (CURL_SOCKET_TIMEOUT is a macro chain Swift may not import).
static inline CURLMcode osh_curl_multi_socket_timeout(CURLM *m, int *running) {
    return curl_multi_socket_action(m, CURL_SOCKET_TIMEOUT, 0, running);
}

// CURLMsg's result lives in a union.
static inline CURLcode osh_curl_msg_result(const CURLMsg *msg) {
    return msg->data.result;
}

// MARK: WebSocket over a CONNECT_ONLY connection (libcurl 7.88 has no ws:// support built in)

// CURLINFO_ACTIVESOCKET writes a curl_socket_t.
static inline CURLcode osh_curl_easy_getinfo_socket(CURL *h, curl_socket_t *out) {
    return (curl_easy_getinfo)(h, CURLINFO_ACTIVESOCKET, out);
}

#endif
