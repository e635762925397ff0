# Writes a C header holding the bytes of IN as `static const unsigned char NAME[]` (8-aligned).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE ${OUT} "/* generated from ${IN} */\nstatic const _Alignas(64) unsigned char ${NAME}[] = {\n${body}\n};\nstatic const unsigned long ${NAME}_len = ${len};\n")
