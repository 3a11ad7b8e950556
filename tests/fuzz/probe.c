/* SPDX-License-Identifier: Apache-2.0 */
/* Configure-time probe: does clang build and link a libFuzzer target here? */
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	(void)data;
	(void)size;
	return 0;
}
