// The errors of the schemas package: what loading and validating a config or a policy reports.
import { defineErrors } from './define.js';

export const API_ERRORS = defineErrors({
  configInvalid: {
    code: 'TG_CONFIG_INVALID',
    message: '{subject} is invalid: {problems}',
    hint: 'each problem names the field (a JSON path such as binds[0].listeners[0].routes[1].backends[0].host) and what it expects; fix those fields and load again',
  },
  durationInvalid: {
    code: 'TG_DURATION_INVALID',
    message: 'invalid duration "{text}": {problem}',
    hint: 'write a Gateway API duration: whole numbers with units h, m, s, ms, e.g. 500ms, 10s, 1m or 1h30m, at most 596h; 0s means no timeout where the field allows it',
  },
  addressInvalid: {
    code: 'TG_ADDRESS_INVALID',
    message: '{field}: got "{value}"; {problem}',
    hint: 'write <host>:<port>: a DNS name, an IPv4 address or an IPv6 address in brackets, and a port from 1 to 65535 (0 only for an address to listen on), e.g. 127.0.0.1:9000 or [::1]:9000',
  },
});
