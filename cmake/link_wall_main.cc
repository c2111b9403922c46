// Links every object of sl_bench (whole archive) with sl_common and the
// third-party libraries alone: a bench call into server code fails this link.
int main() { return 0; }
