// curl-init-rss.c: Rss (KB) of libcrypto, libssl, GnuTLS, libcurl at start, after curl_global_init,
// after curl_easy_init and after one plain-HTTP GET.  gcc -O2 curl-init-rss.c -lcurl; ./a.out [FLAGS] [URL]
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
static const char *libs[] = {"libcrypto", "libssl", "libgnutls", "libcurl", "libp11-kit", "[heap]", NULL};
static void report(const char *stage) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512], cur[256] = "";
    long rss[8] = {0};
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx", &a, &b) == 2 && strchr(line, ' ')) {
            char *p = strrchr(line, ' '); snprintf(cur, sizeof cur, "%s", p + 1);
            if (!strchr(line, '/') && !strstr(line, "[heap]")) cur[0] = 0;
            continue;
        }
        long v;
        if (sscanf(line, "Rss: %ld", &v) == 1)
            for (int i = 0; libs[i]; i++) if (strstr(cur, libs[i])) rss[i] += v;
    }
    fclose(f);
    FILE *s = fopen("/proc/self/status", "r"); long vm = 0;
    while (fgets(line, sizeof line, s)) sscanf(line, "VmRSS: %ld", &vm);
    fclose(s);
    printf("%-28s", stage);
    for (int i = 0; libs[i]; i++) printf(" %s=%ld", libs[i], rss[i]);
    printf(" VmRSS=%ld\n", vm);
}
static size_t sink(char *p, size_t s, size_t n, void *u) { (void)p; (void)u; return s * n; }
int main(int argc, char **argv) {
    long flags = argc > 1 ? strtol(argv[1], NULL, 0) : CURL_GLOBAL_DEFAULT;
    report("start");
    curl_global_init(flags);
    report("after curl_global_init");
    CURL *h = curl_easy_init();
    report("after curl_easy_init");
    curl_easy_setopt(h, CURLOPT_URL, argc > 2 ? argv[2] : "http://127.0.0.1:18331/sensorhub/api");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    CURLcode r = curl_easy_perform(h);
    char label[64]; snprintf(label, sizeof label, "after GET (%d)", r);
    report(label);
    return 0;
}
