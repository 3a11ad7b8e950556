/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libfreeipmi, loaded on first use (dynlib.h): only a configured BMC (--platform.ipmi.*) needs
 * it, and it is ~2 MiB of resident memory otherwise. These are the calls src_ipmi.c makes.
 */
#include <stddef.h>

#include "dynlib.h"
#include "ipmi_lazy.h"

static struct vw_dynlib lib = VW_DYNLIB("libfreeipmi.so.17");

const char *vw_ipmi_load(void)
{
	return vw_dynlib_need(&lib, "libfreeipmi", "libfreeipmi17");
}

struct fiid_field *vw_ipmi_template(const char *name)
{
	return vw_dynlib_sym(&lib, name);
}

VW_DYNLIB_FORWARD(lib, NULL, fiid_obj_t, fiid_obj_create, (fiid_template_t tmpl), (tmpl))
VW_DYNLIB_FORWARD_VOID(lib, fiid_obj_destroy, (fiid_obj_t obj), (obj))
VW_DYNLIB_FORWARD(lib, -1, int, fiid_obj_get, (fiid_obj_t obj, const char *field, uint64_t *val),
		  (obj, field, val))
VW_DYNLIB_FORWARD(lib, -1, int, fiid_obj_get_data,
		  (fiid_obj_t obj, const char *field, void *data, unsigned int len),
		  (obj, field, data, len))
VW_DYNLIB_FORWARD(lib, NULL, ipmi_ctx_t, ipmi_ctx_create, (void), ())
VW_DYNLIB_FORWARD_VOID(lib, ipmi_ctx_destroy, (ipmi_ctx_t ctx), (ctx))
VW_DYNLIB_FORWARD(lib, -1, int, ipmi_ctx_close, (ipmi_ctx_t ctx), (ctx))
VW_DYNLIB_FORWARD(lib, IPMI_ERR_INTERNAL_ERROR, int, ipmi_ctx_errnum, (ipmi_ctx_t ctx), (ctx))
VW_DYNLIB_FORWARD(lib, (char *)"libfreeipmi is not loaded", char *, ipmi_ctx_errormsg,
		  (ipmi_ctx_t ctx), (ctx))
VW_DYNLIB_FORWARD(lib, -1, int, ipmi_ctx_open_inband,
		  (ipmi_ctx_t ctx, ipmi_driver_type_t driver_type, int disable_auto_probe,
		   uint16_t driver_address, uint8_t register_spacing, const char *driver_device,
		   unsigned int workaround_flags, unsigned int flags),
		  (ctx, driver_type, disable_auto_probe, driver_address, register_spacing,
		   driver_device, workaround_flags, flags))
VW_DYNLIB_FORWARD(lib, -1, int, ipmi_ctx_open_outofband_2_0,
		  (ipmi_ctx_t ctx, const char *hostname, const char *username,
		   const char *password, const unsigned char *k_g, unsigned int k_g_len,
		   uint8_t privilege_level, uint8_t cipher_suite_id, unsigned int session_timeout,
		   unsigned int retransmission_timeout, unsigned int workaround_flags,
		   unsigned int flags),
		  (ctx, hostname, username, password, k_g, k_g_len, privilege_level,
		   cipher_suite_id, session_timeout, retransmission_timeout, workaround_flags,
		   flags))
VW_DYNLIB_FORWARD(lib, -1, int, ipmi_cmd_dcmi_get_power_reading,
		  (ipmi_ctx_t ctx, uint8_t mode, uint8_t mode_attributes, fiid_obj_t rs),
		  (ctx, mode, mode_attributes, rs))
VW_DYNLIB_FORWARD(lib, -1, int, ipmi_cmd_get_sdr,
		  (ipmi_ctx_t ctx, uint16_t reservation_id, uint16_t record_id, uint8_t offset,
		   uint8_t bytes_to_read, fiid_obj_t rs),
		  (ctx, reservation_id, record_id, offset, bytes_to_read, rs))
VW_DYNLIB_FORWARD(lib, -1, int, ipmi_cmd_reserve_sdr_repository, (ipmi_ctx_t ctx, fiid_obj_t rs),
		  (ctx, rs))
VW_DYNLIB_FORWARD(lib, NULL, ipmi_sdr_ctx_t, ipmi_sdr_ctx_create, (void), ())
VW_DYNLIB_FORWARD_VOID(lib, ipmi_sdr_ctx_destroy, (ipmi_sdr_ctx_t ctx), (ctx))
VW_DYNLIB_FORWARD(lib, -1, int, ipmi_sdr_parse_record_id_and_type,
		  (ipmi_sdr_ctx_t ctx, const void *rec, unsigned int len, uint16_t *id,
		   uint8_t *type),
		  (ctx, rec, len, id, type))
VW_DYNLIB_FORWARD(lib, -1, int, ipmi_sdr_parse_event_reading_type_code,
		  (ipmi_sdr_ctx_t ctx, const void *rec, unsigned int len, uint8_t *code),
		  (ctx, rec, len, code))
VW_DYNLIB_FORWARD(lib, -1, int, ipmi_sdr_parse_sensor_units,
		  (ipmi_sdr_ctx_t ctx, const void *rec, unsigned int len, uint8_t *percentage,
		   uint8_t *modifier, uint8_t *rate, uint8_t *base_unit, uint8_t *modifier_unit),
		  (ctx, rec, len, percentage, modifier, rate, base_unit, modifier_unit))
VW_DYNLIB_FORWARD(lib, -1, int, ipmi_sdr_parse_id_string,
		  (ipmi_sdr_ctx_t ctx, const void *rec, unsigned int len, char *id,
		   unsigned int id_len),
		  (ctx, rec, len, id, id_len))
VW_DYNLIB_FORWARD(lib, NULL, ipmi_sensor_read_ctx_t, ipmi_sensor_read_ctx_create,
		  (ipmi_ctx_t ctx), (ctx))
VW_DYNLIB_FORWARD_VOID(lib, ipmi_sensor_read_ctx_destroy, (ipmi_sensor_read_ctx_t ctx), (ctx))
VW_DYNLIB_FORWARD(lib, IPMI_SENSOR_READ_ERR_INTERNAL_ERROR, int, ipmi_sensor_read_ctx_errnum,
		  (ipmi_sensor_read_ctx_t ctx), (ctx))
VW_DYNLIB_FORWARD(lib, -1, int, ipmi_sensor_read,
		  (ipmi_sensor_read_ctx_t ctx, const void *rec, unsigned int len,
		   uint8_t shared_offset, uint8_t *raw, double **reading, uint16_t *events),
		  (ctx, rec, len, shared_offset, raw, reading, events))
