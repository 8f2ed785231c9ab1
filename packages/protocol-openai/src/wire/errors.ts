import * as z from 'zod';

/** The OpenAI error envelope every non-2xx answer carries (spec §5.1). */
export const ErrorEnvelopeSchema = z.object({
  error: z.object({
    message: z.string(),
    type: z.enum(['invalid_request_error', 'gateway_auth_error', 'rate_limit_error', 'server_error']),
    param: z.string().nullable(),
    code: z.string(),
    hermes: z.record(z.string(), z.unknown()).optional(),
  }),
});
/** An error envelope. */
export type ErrorEnvelope = z.infer<typeof ErrorEnvelopeSchema>;
