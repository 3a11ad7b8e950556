/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A command-handler module for OpenIPMI's ipmi_sim (loaded by tests/ipmi/lan.conf's `loadlib`):
 * DCMI Get Power Reading (NetFn 0x2C group extension, cmd 0x02, group extension 0xDC), which
 * ipmi_sim lacks. Its answer comes from a control file the test writes, read on every request,
 * its path the module's option string:
 *
 *   <watts>      power measurement active, current = <watts> (0..65535, a decimal integer)
 *   inactive     the "power measurement active" bit clear (and every reading 0)
 *   invalid      completion code 0xC1 (invalid command): a BMC without DCMI
 *   (no file)    the same as invalid
 *
 * Every other DCMI command is 0xC1 too. Built by tests/meson.build as a shared module: it links
 * nothing, ipmi_sim's own symbols (ipmi_emu_register_group_extension_handler, handle_invalid_cmd,
 * check_msg_length) are resolved when ipmi_sim loads it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <OpenIPMI/mcserv.h>
#include <OpenIPMI/serv.h>

#define DCMI_GROUP 0xDC
#define DCMI_GET_POWER_READING 0x02
#define DCMI_MEASUREMENT_ACTIVE 0x40 /* power reading state, bit 6 */
#define DCMI_PERIOD_MS 1000u

int ipmi_sim_module_print_version(sys_data_t *sys, char *options);
int ipmi_sim_module_init(sys_data_t *sys, const char *options);

static char ctl_path[512];

static void put16(unsigned char *p, unsigned v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
}

static void put32(unsigned char *p, uint32_t v)
{
	put16(p, v & 0xffff);
	put16(p + 2, v >> 16);
}

/* The control file's word: 1 with *watts for a reading, 0 inactive, -1 invalid (or none). */
static int read_ctl(unsigned *watts)
{
	char line[64] = "";
	FILE *f = fopen(ctl_path, "re");
	char *end;
	unsigned long w;

	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, " \t\r\n")] = '\0';
	if (strcmp(line, "inactive") == 0)
		return 0;
	w = strtoul(line, &end, 10);
	if (end == line || *end || w > 0xffff)
		return -1;
	*watts = (unsigned)w;
	return 1;
}

static void get_power_reading(lmc_data_t *mc, msg_t *msg, unsigned char *rdata,
			      unsigned int *rdata_len)
{
	unsigned watts = 0;
	int state;

	if (check_msg_length(msg, 3, rdata, rdata_len)) /* group, mode, mode attributes */
		return;
	state = read_ctl(&watts);
	if (state < 0) {
		handle_invalid_cmd(mc, rdata, rdata_len);
		return;
	}
	memset(rdata, 0, 19);
	rdata[0] = 0; /* completion code */
	rdata[1] = DCMI_GROUP;
	put16(rdata + 2, watts);         /* current */
	put16(rdata + 4, watts);         /* minimum over the period */
	put16(rdata + 6, watts);         /* maximum */
	put16(rdata + 8, watts);         /* average */
	put32(rdata + 10, (uint32_t)time(NULL));
	put32(rdata + 14, DCMI_PERIOD_MS);
	rdata[18] = state ? DCMI_MEASUREMENT_ACTIVE : 0;
	*rdata_len = 19;
}

static void dcmi_handler(lmc_data_t *mc, msg_t *msg, unsigned char *rdata,
			 unsigned int *rdata_len, void *cb_data)
{
	(void)cb_data;
	if (msg->cmd == DCMI_GET_POWER_READING)
		get_power_reading(mc, msg, rdata, rdata_len);
	else
		handle_invalid_cmd(mc, rdata, rdata_len);
}

int ipmi_sim_module_print_version(sys_data_t *sys, char *options)
{
	(void)sys;
	(void)options;
	printf("virtwatt DCMI power reading test module\n");
	return 0;
}

int ipmi_sim_module_init(sys_data_t *sys, const char *options)
{
	(void)sys;
	if (!options || !*options || strlen(options) >= sizeof(ctl_path))
		return 22; /* EINVAL: the control file's path is the option */
	snprintf(ctl_path, sizeof(ctl_path), "%s", options);
	ipmi_emu_register_group_extension_handler(DCMI_GROUP, dcmi_handler, NULL);
	return 0;
}
