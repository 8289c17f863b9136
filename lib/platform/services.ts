// The platform's two callback services, the event types each one sends and the field that names its tasks
// (docs/platform-callbacks.md §2.1, §2.8 and §6: the screenshot service does not use type 2). Every list
// of them is this one.

export const SERVICES = ['recording', 'screenshot'] as const;
export type Service = (typeof SERVICES)[number];

export function isService(value: unknown): value is Service {
  return SERVICES.includes(value as Service);
}

const CALLBACK_TYPES = [1, 2, 3, 4] as const;
export type CallbackType = (typeof CALLBACK_TYPES)[number];

/** Event types each service sends. */
export const CALLBACK_TYPES_OF = {
  recording: [1, 2, 3, 4],
  screenshot: [1, 3, 4],
} as const satisfies Record<Service, readonly CallbackType[]>;

/** Whether `type` is an event type this service sends. */
export function isCallbackTypeOf(service: Service, type: unknown): type is CallbackType {
  return (CALLBACK_TYPES_OF[service] as readonly unknown[]).includes(type);
}

/** The body field that names a task, per service. */
export const ID_FIELD_OF = {
  recording: 'recordId',
  screenshot: 'imageId',
} as const satisfies Record<Service, string>;
