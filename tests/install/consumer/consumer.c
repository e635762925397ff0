/* consumer.c - a program outside the tree that uses the *installed* ingot: writes a file, reads
 * it back, checks the values. Built through pkg-config and through find_package(ingot). */
#include <stdio.h>
#include <string.h>

#include <ingot/ingot.h>

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "consumer.ingot";
    if (ingot_version_number() != INGOT_VERSION_NUMBER) return 10;
    ingot_writer *w;
    ingot_error e;
    float data[4] = {1, 2, 3, 4};
    uint64_t shape[1] = {4};
    if (ingot_writer_new(NULL, &w, &e) || ingot_writer_set_string(w, "who", "consumer") ||
        ingot_writer_add_tensor(w, "x", INGOT_DTYPE_F32, 1, shape, NULL, data, &e) ||
        ingot_writer_save(w, path, &e))
        return 11;
    ingot_writer_free(w);
    ingot_file *f;
    if (ingot_file_open(path, NULL, &f, &e)) return 12;
    ingot_tensor_info t;
    const char *s;
    size_t n;
    if (ingot_file_tensor_find(f, "x", &t) || t.nbytes != 16 || memcmp(t.data, data, 16)) return 13;
    if (ingot_file_meta_get_string(f, "who", &s, &n) || n != 8 || memcmp(s, "consumer", 8)) return 14;
    if (ingot_file_verify(f, 1, &e)) return 15;
    ingot_file_close(f);
    printf("consumer ok (ingot %s)\n", ingot_version_string());
    return 0;
}
