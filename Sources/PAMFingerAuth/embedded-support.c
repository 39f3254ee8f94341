/* What the module's Embedded Swift build needs beside libc and libpam (mk/module.mk).
 *
 * The standard library's hash tables size themselves with ceil(), which glibc keeps in
 * libm; the module links libpam and libc only, so it carries this one function, local to
 * it (exports.map exports the PAM entry points alone). Capacities are small positive
 * numbers; NaN, infinities and values beyond 2^52 (already whole) come back unchanged. */
__attribute__((visibility("hidden"))) double ceil(double x) {
    if (!(x == x) || x >= 4503599627370496.0 || x <= -4503599627370496.0) return x;
    long long whole = (long long)x;
    double truncated = (double)whole;
    return truncated < x ? truncated + 1.0 : truncated;
}
