export { Quantity, QuantityError, type QuantityFormat } from './resource/quantity.js';
