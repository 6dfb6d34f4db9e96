#include <stdint.h>
struct person { char name[8]; int age; };

static int count(const char *s, char c)
{
    int n = 0;
    for (int i = 0; s[i] != 0 && i < 16; i++)
        n += s[i] == c;
    return n;
}

void mpc_main(char INPUT_A_text[8], int INPUT_B_k, int *OUTPUT_r, char OUTPUT_s[12], int *OUTPUT_size)
{
    char greet[] = "hi\tthere";
    unsigned char raw[4] = "\xff\001";
    char names[3][6] = {"ann", "bob", "carol"};
    struct person p = {"dave", 42};
    struct person q = {.age = 7, .name = "eve"};
    const char *msg = "abc" "def";
    int r = count(msg, 'e') + count("banana", 'a') * 10;
    r += "xyz"[INPUT_B_k & 3];
    r += names[INPUT_B_k % 3][1];
    r += raw[0] + raw[1] + p.name[0] + p.age + q.name[2] + q.age;
    r += (int)sizeof("hello") * 1000 + (int)sizeof greet * 100000;
    for (int i = 0; i < 8; i++)
        r += INPUT_A_text[i] == greet[i];
    *OUTPUT_size = sizeof names;
    char out[12] = "result:";
    out[7] = (char)('0' + (r & 7));
    for (int i = 0; i < 12; i++) OUTPUT_s[i] = out[i];
    *OUTPUT_r = r;
}
